#include "actors/scheduler.hpp"

#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/sec.hpp>
#include <caf/send.hpp>
#include <cassert>
#include <algorithm>
#include <ctime>
#include <optional>
#include <deque>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "actors/agent_actor.hpp"
#include "actors/error.hpp"
#include "actors/journal.hpp"
#include "actors/messages.hpp"
#include "runtime/model/ids.hpp"
#include "runtime/model/json_writer.hpp"

namespace skein {
namespace {

using wake_atom = caf::atom_constant<caf::atom("schedwake")>;

// Resolves of a bound thread tried when its actor passivates in between.
constexpr int resolve_attempts_max = 8;
// Firings one wake starts, across schedules: a schedule that fell far behind
// goes on in the next wake, at once, so other messages get their turn.
constexpr uint64_t pass_firings_max = 1000;
// A firing whose write failed (storage) is tried again this much later.
constexpr int64_t storage_retry_ms = 1000;
// A firing a bound thread could not queue (thread_queue_max: it runs slower than
// its schedule, or a burst of due times after a stop) is tried again this much
// later: held back, not failed. Held past the grace, the due time is missed.
constexpr int64_t queue_full_retry_ms = 100;

// "YYYY-MM-DD HH:MM UTC" of a due time, for trigger thread titles.
std::string utc_minute(int64_t ms) {
  std::time_t secs = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02d %02d:%02d UTC", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                tm.tm_hour, tm.tm_min);
  return buf;
}

// One wake, or one fire_due request (answered when every firing it started has
// ended). A schedule's due times that are still due when its firing ends follow
// in the same pass, up to pass_firings_max firings.
struct fire_pass {
  caf::typed_response_promise<uint64_t> promise;
  bool has_promise = false;
  uint64_t outstanding = 0;
  uint64_t fired = 0;
  uint64_t started = 0;
};
using pass_ptr = std::shared_ptr<fire_pass>;

class scheduler_actor : public caf::event_based_actor {
 public:
  scheduler_actor(caf::actor_config& cfg, scheduler_config config, std::vector<schedule> loaded)
      : caf::event_based_actor(cfg), config_(std::move(config)) {
    for (auto& s : loaded) put_memory(std::move(s));
  }

  const char* name() const override { return "skein.scheduler"; }

  caf::behavior make_behavior() override {
    arm();
    return {
        [this](create_atom, schedule& s) -> caf::result<schedule> { return create(std::move(s)); },
        [this](pause_atom, std::string& id) -> caf::result<schedule> { return set_paused(id, true); },
        [this](resume_atom, std::string& id) -> caf::result<schedule> { return set_paused(id, false); },
        [this](delete_atom, std::string& id) -> caf::result<void> { return erase(id); },
        [this](fire_due_atom) -> caf::result<uint64_t> {
          auto pass = std::make_shared<fire_pass>();
          pass->promise = make_response_promise<uint64_t>();
          pass->has_promise = true;
          fire_due(pass);
          return pass->promise;
        },
        [this](release_atom, std::string& id) -> caf::result<bool> {
          auto promise = make_response_promise<bool>();
          when_idle(id, [this, id, promise]() mutable {
            bool held = schedules_.count(id) != 0;
            drop_memory(id);
            promise.deliver(held);
          });
          return promise;
        },
        [this](load_atom, std::string& id) -> caf::result<bool> {
          schedule s;
          status r = config_.log->read_schedule(id, &s);
          if (r.code() == errc::not_found) return false;
          if (!r) return to_error(r);
          auto promise = make_response_promise<bool>();
          when_idle(id, [this, s, promise]() mutable {
            put_memory(std::move(s));
            arm();
            promise.deliver(true);
          });
          return promise;
        },
        [this](wake_atom, uint64_t generation) {
          if (generation != wake_generation_) return;  // an earlier wake was armed since
          armed_ = false;
          fire_due(std::make_shared<fire_pass>());
          arm();
        },
    };
  }

 private:
  int64_t now() const { return config_.wall_clock ? config_.wall_clock() : now_ms(); }

  // Arms the wake for the earliest due time of a schedule not in flight (at
  // once when it is due), unless a wake at or before it is armed already. No
  // wake sleeps longer than wake_period: the wall clock may jump while the
  // timer counts steady time. Called after every change of due_ or busy_.
  void arm() {
    if (config_.wake_period.count() <= 0 || config_.timers == nullptr) return;
    std::optional<int64_t> at;
    for (const auto& [due, id] : due_) {
      if (busy_.count(id) != 0) continue;
      auto b = retry_at_.find(id);
      int64_t when = b == retry_at_.end() ? due : std::max(due, b->second);
      if (!at || when < *at) at = when;
      if (b == retry_at_.end()) break;  // due_ is in due order: nothing later comes first
    }
    if (!at) return;
    if (armed_ && armed_at_ <= *at) return;
    armed_ = true;
    armed_at_ = *at;
    uint64_t generation = ++wake_generation_;
    int64_t delay_ms = std::clamp<int64_t>(*at - now(), 0, config_.wake_period.count());
    if (delay_ms == 0) {
      send(this, wake_atom::value, generation);
      return;
    }
    config_.timers->after(std::chrono::milliseconds{delay_ms}, [self = caf::actor_cast<caf::actor>(this), generation] {
      caf::anon_send(self, wake_atom::value, generation);
    });
  }

  // --- memory: the state of every schedule, as durable ---------------------

  void put_memory(schedule s) {
    drop_memory(s.id);
    if (!s.paused && s.next_fire_at_ms != 0) due_.emplace(s.next_fire_at_ms, s.id);
    std::string id = s.id;
    schedules_[id] = std::move(s);
  }

  void drop_memory(const std::string& id) {
    auto it = schedules_.find(id);
    if (it == schedules_.end()) return;
    due_.erase({it->second.next_fire_at_ms, id});
    schedules_.erase(it);
  }

  // --- one write per schedule at a time ------------------------------------

  // Runs `op` now if no write of `id` is in flight, else once the last one has ended.
  void when_idle(const std::string& id, std::function<void()> op) {
    if (busy_.count(id) == 0) op();
    else waiting_[id].push_back(std::move(op));
  }

  void done(const std::string& id) {
    busy_.erase(id);
    auto it = waiting_.find(id);
    while (it != waiting_.end() && !it->second.empty() && busy_.count(id) == 0) {
      auto op = std::move(it->second.front());
      it->second.pop_front();
      op();
      it = waiting_.find(id);
    }
    if (it != waiting_.end() && it->second.empty()) waiting_.erase(it);
  }

  // Writes schedule rows alone (no thread) through the journal; `then` gets the outcome.
  void write_rows(std::vector<schedule_row> rows, std::function<void(const status&)> then) {
    tick t;
    t.side_rows = std::move(rows);
    request(config_.journal, caf::infinite, commit_atom::value, std::move(t))
        .then([then](uint64_t) { then(status::ok()); }, [then](caf::error& e) { then(to_status(e)); });
  }

  // --- CRUD ----------------------------------------------------------------

  caf::result<schedule> create(schedule s) {
    int64_t t = now();
    if (s.id.empty()) s.id = new_schedule_id(t);
    s.created_at_ms = t;
    s.fire_count = 0;
    s.last_fire_at_ms = 0;
    s.history_seq = 0;
    if (s.kind == schedule_kind::interval && s.anchor_ms == 0 && s.interval_ms >= schedule_interval_ms_min)
      s.anchor_ms = t + static_cast<int64_t>(s.interval_ms);  // first firing one interval from now
    if (status v = validate_schedule(s); !v) return to_error(v);
    if (schedules_.count(s.id) != 0 || busy_.count(s.id) != 0)
      return to_error(status::conflict("schedule " + s.id + " already exists").with_field("id"));
    int64_t next = 0;
    if (s.kind == schedule_kind::once) next = s.at_ms;  // even if past: due at once, or missed past the grace
    else if (status n = schedule_next_from(s, t, &next); !n) return to_error(n);
    s.next_fire_at_ms = next;
    if (!s.thread_id.empty()) {
      manifest m;
      status r = config_.log->read_manifest(s.thread_id, &m);
      if (r.code() == errc::not_found)
        return to_error(status::not_found("schedule.thread_id: thread " + s.thread_id + " does not exist")
                            .with_field("thread_id"));
      if (!r) return to_error(r);
      if (m.agent_id != s.agent_id)
        return to_error(status::invalid_input("schedule.thread_id: thread " + s.thread_id + " belongs to agent " +
                                              m.agent_id + ", not " + s.agent_id)
                            .with_field("thread_id"));
    }
    auto promise = make_response_promise<schedule>();
    busy_.insert(s.id);
    // The agent must exist: the directory knows every agent.
    request(config_.directory, caf::infinite, agent_atom::value, s.agent_id)
        .then(
            [this, s, promise](agent_config&) mutable { store(s, promise); },
            [this, id = s.id, agent = s.agent_id, promise](caf::error& e) mutable {
              done(id);
              status st = to_status(e);
              if (st.code() == errc::not_found)
                st = status::not_found("schedule.agent_id: agent " + agent + " does not exist").with_field("agent_id");
              promise.deliver(to_error(st));
            });
    return promise;
  }

  caf::result<schedule> set_paused(const std::string& id, bool paused) {
    auto promise = make_response_promise<schedule>();
    when_idle(id, [this, id, paused, promise]() mutable {
      auto it = schedules_.find(id);
      if (it == schedules_.end()) {
        promise.deliver(to_error(status::not_found("schedule " + id + " does not exist")));
        return;
      }
      schedule s = it->second;
      if (s.paused == paused) {
        promise.deliver(s);
        return;
      }
      s.paused = paused;
      if (!paused) {
        // Missed while paused are skipped: the next fire counts from now.
        int64_t t = now(), next = 0;
        if (s.kind == schedule_kind::once) next = s.at_ms >= t ? s.at_ms : 0;
        else if (status n = schedule_next_from(s, t, &next); !n) {
          promise.deliver(to_error(n));
          return;
        }
        s.next_fire_at_ms = next;
      }
      busy_.insert(id);
      store(std::move(s), promise);
    });
    return promise;
  }

  // Writes `s` (definition and state, no history row) while its id is busy;
  // answers `promise` with it once durable, and lets the next op on it in.
  void store(schedule s, caf::typed_response_promise<schedule> promise) {
    std::vector<schedule_row> rows;
    if (status r = schedule_rows_of(s, nullptr, &rows); !r) {
      done(s.id);
      promise.deliver(to_error(r));
      return;
    }
    write_rows(std::move(rows), [this, s, promise](const status& w) mutable {
      if (w) put_memory(s);
      done(s.id);
      arm();
      if (!w) {
        promise.deliver(to_error(w));
        return;
      }
      promise.deliver(s);
    });
  }

  caf::result<void> erase(const std::string& id) {
    if (status v = validate_id(id, "schedule id"); !v) return to_error(v);
    auto promise = make_response_promise();
    when_idle(id, [this, id, promise]() mutable {
      if (schedules_.count(id) == 0) {
        promise.deliver(caf::unit);  // idempotent
        return;
      }
      busy_.insert(id);
      write_rows(schedule_erase_rows(id), [this, id, promise](const status& w) mutable {
        if (w) drop_memory(id);
        done(id);
        arm();
        if (w) promise.deliver(caf::unit);
        else promise.deliver(to_error(w));
      });
    });
    return promise;
  }

  // --- firing --------------------------------------------------------------

  void fire_due(const pass_ptr& pass) {
    int64_t t = now();
    std::vector<std::string> due;
    for (const auto& [at, id] : due_) {
      if (at > t || due.size() >= pass_firings_max) break;
      auto b = retry_at_.find(id);
      if (b != retry_at_.end() && b->second > t) continue;
      if (busy_.count(id) == 0) due.push_back(id);
    }
    pass->outstanding = due.size() + 1;  // +1: this loop, released below
    for (const auto& id : due) fire_one(id, t, pass);
    finish_one(pass, false);
  }

  void finish_one(const pass_ptr& pass, bool fired) {
    if (fired) ++pass->fired;
    assert(pass->outstanding > 0);  // one per firing started, plus the starting loop
    if (--pass->outstanding == 0 && pass->has_promise) pass->promise.deliver(pass->fired);
  }

  // A firing of `id` has ended (its write durable, or refused). A schedule
  // still due — it fell behind by several due times, at open or after a stall
  // shorter than the grace — fires its next due time at once, in this pass, so
  // every due time fires and none is skipped for lateness alone.
  void firing_ended(const std::string& id, const pass_ptr& pass, bool fired) {
    auto it = schedules_.find(id);
    int64_t t = now();
    if (it != schedules_.end() && busy_.count(id) == 0 && !it->second.paused && it->second.next_fire_at_ms != 0 &&
        it->second.next_fire_at_ms <= t && pass->started < pass_firings_max) {
      ++pass->outstanding;
      fire_one(id, t, pass);
    }
    finish_one(pass, fired);
    arm();
  }

  // A firing that wrote nothing — storage failed, or a bound thread's queue is
  // full — fires again `retry_ms` later (not at once: a full disk would spin).
  void firing_failed(const std::string& id, const pass_ptr& pass, int64_t retry_ms = storage_retry_ms) {
    retry_at_[id] = now() + retry_ms;
    done(id);
    finish_one(pass, false);
    arm();
  }

  void fire_one(const std::string& id, int64_t t, const pass_ptr& pass) {
    const schedule& s = schedules_.at(id);
    busy_.insert(id);
    retry_at_.erase(id);
    ++pass->started;
    int64_t due = s.next_fire_at_ms;
    if (t - due > config_.grace_ms) {
      missed_firings m;
      if (status st = schedule_missed(s, t, &m); !st) {
        firing_failed(id, pass);
        return;
      }
      if (s.missed == missed_policy::skip) {
        skip(s, m, t, pass);
        return;
      }
      deliver(s, m.latest_ms, m.next_ms, t, pass);  // run_once: the latest missed time
      return;
    }
    int64_t next = 0;
    if (status st = schedule_next_after(s, due, &next); !st) next = 0;  // a cron that cannot go on stops
    deliver(s, due, next, t, pass);
  }

  void skip(const schedule& old, const missed_firings& m, int64_t t, const pass_ptr& pass) {
    schedule s = old;
    s.next_fire_at_ms = m.next_ms;
    s.history_seq += 1;
    schedule_firing f;
    f.schedule_id = s.id;
    f.seq = s.history_seq;
    f.scheduled_at_ms = old.next_fire_at_ms;
    f.fired_at_ms = t;
    f.outcome = firing_outcome::skipped;
    f.missed = m.count;
    f.reason = std::string{m.capped ? "at least " : ""} + std::to_string(m.count) +
               " firings missed (policy skip)";
    write_outcome(std::move(s), std::move(f), pass, false);
  }

  // Writes a firing that delivered nothing (skipped, failed) with the schedule's new state.
  void write_outcome(schedule s, schedule_firing f, const pass_ptr& pass, bool fired) {
    std::vector<schedule_row> rows;
    if (status r = schedule_rows_of(s, &f, &rows); !r) {
      firing_failed(s.id, pass);
      return;
    }
    write_rows(std::move(rows), [this, s, pass, fired](const status& w) {
      if (!w) return firing_failed(s.id, pass);  // the old state stays: it is tried again
      put_memory(s);
      done(s.id);
      firing_ended(s.id, pass, fired);
    });
  }

  void deliver(const schedule& old, int64_t scheduled, int64_t next, int64_t t, const pass_ptr& pass) {
    schedule s = old;
    s.next_fire_at_ms = next;
    s.last_fire_at_ms = scheduled;
    s.fire_count += 1;
    s.history_seq += 1;
    schedule_firing f;
    f.schedule_id = s.id;
    f.seq = s.history_seq;
    f.scheduled_at_ms = scheduled;
    f.fired_at_ms = t;
    f.run_id = new_run_id();
    f.thread_id = s.thread_id;
    if (f.thread_id.empty()) {  // an id this node owns, within bounded tries (mint_thread_id)
      core_options ids;
      ids.owns_id = config_.owns_id;
      f.thread_id = mint_thread_id(ids, t);
    }
    f.outcome = firing_outcome::fired;
    run_input in;
    in.text = s.input_text;
    in.role = s.input_role;
    in.source = "scheduler";
    in.run_id = f.run_id;
    std::vector<schedule_row> rows;
    if (status r = schedule_rows_of(s, &f, &rows); !r) {
      firing_failed(s.id, pass);
      return;
    }
    // A refusal still advances the schedule: the history row says failed, and why.
    std::function<void(const caf::error&)> on_refused = [this, old, s, f, pass](const caf::error& e) mutable {
      status st = to_status(e);
      if (st.code() == errc::io_error || st.code() == errc::no_space || st.code() == errc::corruption)
        return firing_failed(s.id, pass);  // storage: nothing was written
      if (st.code() == errc::overloaded && !s.thread_id.empty())
        return firing_failed(s.id, pass, queue_full_retry_ms);  // the bound thread's queue is full: held back
      s.fire_count = old.fire_count;  // fire_count counts deliveries only
      f.outcome = firing_outcome::failed;
      f.reason = st.to_string();
      f.run_id.clear();
      // A bound thread that refused the firing (and still exists) says so in its log.
      if (!s.thread_id.empty() && st.code() != errc::not_found) {
        std::string data;
        json_writer w{&data};
        w.begin_object();
        w.field("kind", "firing");
        w.field("schedule_id", s.id);
        w.field("reason", f.reason);
        w.end_object();
        request(config_.directory, caf::infinite, resolve_atom::value, s.thread_id)
            .then([data](thread_actor& thread) { caf::anon_send(thread, dispatch_atom::value, data); },
                  [](caf::error&) {});  // gone meanwhile: nothing to record it on
      }
      write_outcome(std::move(s), std::move(f), pass, false);
    };
    if (s.thread_id.empty()) {
      trigger_firing tf;
      tf.options.agent_id = s.agent_id;
      if (!s.title_prefix.empty()) tf.options.title = s.title_prefix + " " + utc_minute(scheduled);
      tf.options.tags = s.tags;
      tf.thread_id = f.thread_id;
      tf.schedule_id = s.id;
      tf.input = std::move(in);
      tf.rows = std::move(rows);
      request(config_.directory, caf::infinite, fire_atom::value, std::move(tf))
          .then(
              [this, s, pass](manifest& m) {
                put_memory(s);
                done(s.id);
                // The same path open uses: activation replays the inbox.
                caf::anon_send(config_.directory, resolve_atom::value, m.id);
                firing_ended(s.id, pass, true);
              },
              on_refused);
      return;
    }
    deliver_bound(std::move(s), std::move(in), std::move(rows), pass, std::move(on_refused), 0);
  }

  // A bound thread: its actor is the only writer of it; the tick taking the
  // input carries the rows. A thread actor that passivated between the resolve
  // and the submit never saw the input: it is resolved again.
  void deliver_bound(schedule s, run_input in, std::vector<schedule_row> rows, pass_ptr pass,
                     std::function<void(const caf::error&)> on_refused, int attempt) {
    request(config_.directory, caf::infinite, resolve_atom::value, s.thread_id)
        .then(
            [this, s, in, rows, pass, on_refused, attempt](thread_actor& target) mutable {
              request(target, caf::infinite, submit_atom::value, in, rows)
                  .then(
                      [this, s, pass](std::string&) {
                        put_memory(s);
                        done(s.id);
                        firing_ended(s.id, pass, true);
                      },
                      [this, s, in, rows, pass, on_refused, attempt](caf::error& e) mutable {
                        bool down = e.category() == caf::atom("system") &&
                                    e.code() == static_cast<uint8_t>(caf::sec::request_receiver_down);
                        if (down && attempt < resolve_attempts_max)
                          deliver_bound(std::move(s), std::move(in), std::move(rows), pass, std::move(on_refused),
                                        attempt + 1);
                        else on_refused(e);
                      });
            },
            on_refused);
  }

  scheduler_config config_;
  std::unordered_map<std::string, schedule> schedules_;
  std::set<std::pair<int64_t, std::string>> due_;  // (next_fire_at_ms, id) of active schedules
  std::unordered_set<std::string> busy_;            // a write of these is in flight
  std::unordered_map<std::string, std::deque<std::function<void()>>> waiting_;  // ops behind it
  std::unordered_map<std::string, int64_t> retry_at_;  // a firing whose write failed: not before this
  bool armed_ = false;           // a wake is on its way
  int64_t armed_at_ = 0;         // the due time it was armed for
  uint64_t wake_generation_ = 0;  // of the latest wake armed: an older one is ignored
};

}  // namespace

status spawn_scheduler(caf::actor_system& sys, scheduler_config config, caf::actor* out) {
  assert(config.log != nullptr);  // the scheduler reads the log it writes through the journal
  std::vector<schedule> loaded;
  SKEIN_TRY(config.log->scan_schedules([&](schedule&& s) {
    if (!config.skip || !config.skip(s.id)) loaded.push_back(std::move(s));
  }));
  *out = sys.spawn<scheduler_actor>(std::move(config), std::move(loaded));
  return status::ok();
}

}  // namespace skein
