#include "actors/effects/retention.hpp"

#include <caf/actor_system.hpp>
#include <caf/blocking_actor.hpp>
#include <map>

#include "actors/budget_ledger.hpp"
#include "actors/error.hpp"
#include "persistence/event_log.hpp"

namespace skein {
namespace {

struct due_thread {
  std::string id;
  bool erase = false;     // else archive
  int64_t before_ms = 0;  // erase: only if untouched since before this
};

class retention_loop {
 public:
  retention_loop(caf::blocking_actor* self, retention_config config)
      : self_(self), config_(std::move(config)) {}

  void run() {
    bool running = true;
    self_->receive_while(running)(
        [&](sweep_atom) -> retention_report { return sweep(); },
        [&](caf::exit_msg&) { running = false; },
        caf::after(config_.interval) >> [&] { sweep(); });
  }

 private:
  retention_report sweep() {
    retention_report r;
    std::vector<agent_config> agents;
    if (status s = ask(&agents, agent_atom::value); !s) {
      r.error = "list agents: " + s.to_string();
      return r;
    }
    std::map<std::string, retention_policy> policies;
    uint32_t days_min = 0;  // the most eager policy bounds the scan
    for (const auto& a : agents) {
      const auto& p = a.retention;
      if (p.archive_after_days == 0 && p.delete_after_days == 0) continue;
      policies[a.id] = p;
      for (uint32_t d : {p.archive_after_days, p.delete_after_days})
        if (d != 0 && (days_min == 0 || d < days_min)) days_min = d;
    }
    if (policies.empty()) return r;
    const int64_t now = config_.wall_clock();
    std::vector<due_thread> due;
    auto collect = [&](const manifest& m) {
      ++r.examined;
      auto it = policies.find(m.agent_id);
      if (it == policies.end()) return;
      const retention_policy& p = it->second;
      int64_t age = now - m.updated_at_ms;
      if (p.delete_after_days != 0 && age >= int64_t{p.delete_after_days} * ms_per_day)
        due.push_back({m.id, true, now - int64_t{p.delete_after_days} * ms_per_day + 1});
      else if (p.archive_after_days != 0 && m.archived_at_ms == 0 &&
               age >= int64_t{p.archive_after_days} * ms_per_day)
        due.push_back({m.id, false, 0});
      else
        return;
      if (m.status == thread_status::running) {  // mid-run: never touched
        r.skipped.push_back(m.id);
        due.pop_back();
      }
    };
    // Collected first, acted on after: the scan holds no snapshot while actors write.
    if (status s = config_.log->list_untouched(now - int64_t{days_min} * ms_per_day + 1000, collect,
                                               &r.unreadable);
        !s)
      r.error = "scan index: " + s.to_string();
    for (const auto& d : due) {
      bool erased = false;
      status s = d.erase ? erase(d.id, d.before_ms, &erased) : archive(d.id, now, &r);
      if (s && d.erase) (erased ? r.deleted : r.skipped).push_back(d.id);
      if (!s && r.error.empty()) r.error = "thread " + d.id + ": " + s.to_string();
    }
    return r;
  }

  status archive(const std::string& id, int64_t now, retention_report* r) {
    for (int attempt = 0; attempt < 8; ++attempt) {  // it may passivate between resolve and ask
      thread_actor target;
      SKEIN_TRY(ask(&target, resolve_atom::value, id));
      bool archived = false, down = false;
      status result;
      self_->request(target, caf::infinite, archive_atom::value, now)
          .receive([&](bool v) { archived = v; },
                   [&](caf::error& e) {
                     down = e.category() == caf::atom("system") &&
                            e.code() == static_cast<uint8_t>(caf::sec::request_receiver_down);
                     result = to_status(e);
                   });
      if (down) continue;
      SKEIN_TRY(result);
      (archived ? r->archived : r->skipped).push_back(id);
      return status::ok();
    }
    return status::overloaded("thread " + id + " kept passivating");
  }

  // Erased only if still idle and untouched since `before_ms` (directory retire).
  status erase(const std::string& id, int64_t before_ms, bool* erased) {
    return ask(erased, retire_atom::value, id, before_ms);
  }

  template <class T, class... Ts>
  status ask(T* out, Ts&&... xs) {
    return ask_actor(config_.directory, out, std::forward<Ts>(xs)...);
  }

  template <class Dest, class T, class... Ts>
  status ask_actor(const Dest& dest, T* out, Ts&&... xs) {
    status result;
    self_->request(dest, caf::infinite, std::forward<Ts>(xs)...)
        .receive([&](T& v) { *out = std::move(v); }, [&](caf::error& e) { result = to_status(e); });
    return result;
  }

  caf::blocking_actor* self_;
  retention_config config_;
};

}  // namespace

caf::actor spawn_retention(caf::actor_system& sys, retention_config config) {
  return sys.spawn<caf::detached>([config](caf::blocking_actor* self) mutable {
    retention_loop{self, std::move(config)}.run();
  });
}

}  // namespace skein
