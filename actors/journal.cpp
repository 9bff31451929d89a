#include "actors/journal.hpp"

#include <caf/actor_system.hpp>
#include <caf/after.hpp>
#include <caf/blocking_actor.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <caf/exit_reason.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/send.hpp>
#include <chrono>
#include <variant>
#include <vector>

#include "actors/caller.hpp"
#include "actors/error.hpp"
#include "runtime/model/ids.hpp"

namespace skein {
namespace {

struct commit_request {
  tick t;
  caf::response_promise promise;
};

// A multi-thread import: its ticks are one batch of their own, all or nothing.
struct commit_all_request {
  std::vector<tick> ticks;
  caf::response_promise promise;
};

struct effect_request {
  effect_write w;
  caf::response_promise promise;
};

struct erase_request {
  std::string thread_id;
  caf::response_promise promise;
};

struct write_request {
  journal_write write;
  caf::response_promise promise;
};

struct agent_request {
  agent_config agent;
  caf::response_promise promise;
};

using request =
    std::variant<commit_request, erase_request, agent_request, commit_all_request, effect_request, write_request>;

int64_t wall_now(const journal_options& o) { return o.wall_clock ? o.wall_clock() : now_ms(); }

committed_tick committed_of(const tick& t, int64_t at_ms) {
  return committed_tick{t.thread_id, t.manifest.agent_id, t.manifest.last_seq, at_ms, false};
}

// The committed feed: sent only after the write it reports is durable.
void tell_listeners(const std::vector<caf::actor>& listeners,
                    std::vector<committed_tick>* feed) {
  // Ticks of schedule rows alone (tick::side_rows) touch no thread: effects need not hear of them.
  std::erase_if(*feed, [](const committed_tick& c) { return c.thread_id.empty(); });
  if (feed->empty()) return;
  for (const auto& l : listeners) caf::anon_send(l, committed_atom::value, *feed);
  feed->clear();
}

std::vector<uint64_t> last_seqs(const std::vector<tick>& ticks) {
  std::vector<uint64_t> out;
  out.reserve(ticks.size());
  for (const auto& t : ticks) out.push_back(t.manifest.last_seq);
  return out;
}

void answer(caf::response_promise& promise, const status& s) {
  if (s) promise.deliver(caf::unit);
  else promise.deliver(to_error(s));
}

class journal_loop {
 public:
  journal_loop(caf::blocking_actor* self, event_log* log, journal_options options)
      : self_(self), log_(log), options_(options) {}

  void run() {
    auto on_commit = [&](commit_atom, tick& t) {
      queue_.push_back(commit_request{std::move(t), self_->make_response_promise()});
    };
    auto on_commit_all = [&](commit_all_atom, std::vector<tick>& ticks) {
      queue_.push_back(commit_all_request{std::move(ticks), self_->make_response_promise()});
    };
    auto on_effect = [&](effect_atom, effect_write& w) {
      queue_.push_back(effect_request{std::move(w), self_->make_response_promise()});
    };
    auto on_listen = [&](listen_atom, caf::actor& a) {
      listeners_.push_back(std::move(a));
      return caf::unit;
    };
    auto on_erase = [&](erase_atom, std::string& id) {
      queue_.push_back(erase_request{std::move(id), self_->make_response_promise()});
    };
    auto on_agent = [&](caf::put_atom, agent_config& a) {
      queue_.push_back(agent_request{std::move(a), self_->make_response_promise()});
    };
    auto on_write = [&](write_atom, journal_write& w) {
      queue_.push_back(write_request{std::move(w), self_->make_response_promise()});
    };
    auto on_close = [&](caf::close_atom) {
      closing_ = true;
      close_promise_ = self_->make_response_promise();
    };
    auto on_stats = [&](caf::get_atom, stats_atom) -> journal_stats { return stats(); };
    auto on_exit = [&](caf::exit_msg&) { closing_ = true; };
    bool drained = false;
    while (!closing_) {
      self_->receive(on_commit, on_commit_all, on_erase, on_agent, on_close, on_stats, on_exit, on_effect, on_listen,
                     on_write);  // block for work
      // Take everything that queued up while the previous write was in flight.
      drained = false;
      while (!drained && !closing_ && queue_.size() < options_.group_ticks_max) {
        self_->receive(on_commit, on_commit_all, on_erase, on_agent, on_close, on_stats, on_exit, on_effect, on_listen,
                       on_write, caf::after(std::chrono::seconds(0)) >> [&] { drained = true; });
      }
      flush();
    }
    flush();
    if (close_promise_.pending()) close_promise_.deliver(caf::unit);
  }

 private:
  journal_stats stats() const {
    journal_stats s;
    s.log = log_->counters();
    s.groups = groups_;
    s.queued_max = queued_max_;
    return s;
  }

  // Writes the queue in arrival order: runs of commits as one group each, erases alone.
  void flush() {
    if (queue_.empty()) return;
    queued_max_ = std::max<uint64_t>(queued_max_, queue_.size());
    size_t i = 0;
    while (i < queue_.size()) {
      if (auto* e = std::get_if<erase_request>(&queue_[i])) {
        status s = log_->erase_thread(e->thread_id);
        if (s) feed_.push_back(committed_tick{e->thread_id, {}, 0, wall_now(options_), true});
        tell_listeners(listeners_, &feed_);
        answer(e->promise, s);
        ++i;
        continue;
      }

      if (auto* w = std::get_if<write_request>(&queue_[i])) {
        answer(w->promise, w->write.fn(*log_));
        ++i;
        continue;
      }
      if (auto* a = std::get_if<agent_request>(&queue_[i])) {
        answer(a->promise, log_->put_agent(a->agent));
        ++i;
        continue;
      }
      if (auto* c = std::get_if<commit_all_request>(&queue_[i])) {
        write_all(*c);
        ++i;
        continue;
      }
      // Commits and effect writes up to the next erase (or import, or agent) go
      // out as one batch: an effect write never crosses an erase of its thread.
      size_t j = i;
      while (j < queue_.size() && (std::holds_alternative<commit_request>(queue_[j]) ||
                                   std::holds_alternative<effect_request>(queue_[j])))
        ++j;
      write_commits(i, j);
      i = j;
    }
    queue_.clear();
  }

  // Writes the commits and effect writes of queue_[begin, end) in one batch.
  void write_commits(size_t begin, size_t end) {
    ticks_.clear();
    effects_.clear();
    std::vector<commit_request*> commits;
    std::vector<effect_request*> effect_requests;
    for (size_t k = begin; k < end; ++k) {
      if (auto* c = std::get_if<commit_request>(&queue_[k])) {
        commits.push_back(c);
        ticks_.push_back(&c->t);
      } else {
        auto* e = &std::get<effect_request>(queue_[k]);
        effect_requests.push_back(e);
        effects_.push_back(&e->w);
      }
    }
    results_.assign(ticks_.size(), status{});
    effect_results_.assign(effects_.size(), status{});
    log_->commit_group(ticks_, results_, effects_, effect_results_);
    ++groups_;
    int64_t now = wall_now(options_);
    for (size_t k = 0; k < commits.size(); ++k)
      if (results_[k]) feed_.push_back(committed_of(commits[k]->t, now));
    // The feed goes out before the acks: whatever a committer does next (a
    // reply, a stats query) reaches an effect after the feed did.
    tell_listeners(listeners_, &feed_);
    for (size_t k = 0; k < commits.size(); ++k) {
      auto& c = *commits[k];
      const status& s = results_[k];
      if (s) c.promise.deliver(c.t.manifest.last_seq);
      else c.promise.deliver(to_error(s));
    }
    for (size_t k = 0; k < effect_requests.size(); ++k) answer(effect_requests[k]->promise, effect_results_[k]);
  }

  void write_all(commit_all_request& c) {
    ticks_.clear();
    for (auto& t : c.ticks) ticks_.push_back(&t);
    status s = log_->commit_all(ticks_);
    ++groups_;
    if (!s) {
      c.promise.deliver(to_error(s));
      return;
    }
    int64_t now = wall_now(options_);
    for (const auto& t : c.ticks) feed_.push_back(committed_of(t, now));
    tell_listeners(listeners_, &feed_);
    c.promise.deliver(last_seqs(c.ticks));
  }


  caf::blocking_actor* self_;
  event_log* log_;
  journal_options options_;
  std::vector<request> queue_;
  std::vector<tick*> ticks_;
  std::vector<effect_write*> effects_;
  std::vector<caf::actor> listeners_;
  std::vector<committed_tick> feed_;
  std::vector<status> results_;
  std::vector<status> effect_results_;
  caf::response_promise close_promise_;
  bool closing_ = false;
  uint64_t groups_ = 0;
  uint64_t queued_max_ = 0;
};

template <class... Ts>
status blocking_request(caf::actor_system& sys, const journal_actor& journal, Ts&&... xs) {
  caller self{sys};
  status result;
  self->request(journal, caf::infinite, std::forward<Ts>(xs)...)
      .receive([&] {}, [&](caf::error& e) { result = to_status(e); });
  return result;
}

// The scheduled variant: same log calls, one request at a time.
journal_actor::behavior_type inline_journal(journal_actor::pointer self, event_log* log, journal_options options) {
  auto groups = std::make_shared<uint64_t>(0);
  auto listeners = std::make_shared<std::vector<caf::actor>>();
  auto tell = [=](std::vector<committed_tick> feed) { tell_listeners(*listeners, &feed); };
  return {
      [=](commit_atom, tick& t) -> caf::result<uint64_t> {
        ++*groups;
        if (status s = log->commit(t); !s) return to_error(s);
        tell({committed_of(t, wall_now(options))});
        return t.manifest.last_seq;
      },
      [=](commit_all_atom, std::vector<tick>& ticks) -> caf::result<std::vector<uint64_t>> {
        ++*groups;
        std::vector<tick*> ptrs;
        for (auto& t : ticks) ptrs.push_back(&t);
        if (status s = log->commit_all(ptrs); !s) return to_error(s);
        std::vector<committed_tick> feed;
        for (const auto& t : ticks) feed.push_back(committed_of(t, wall_now(options)));
        tell(std::move(feed));
        return last_seqs(ticks);
      },
      [=](effect_atom, effect_write& w) -> caf::result<void> {
        if (status s = log->commit_effect(w); !s) return to_error(s);
        return caf::unit;
      },
      [=](listen_atom, caf::actor& a) { listeners->push_back(std::move(a)); },
      [=](erase_atom, std::string& id) -> caf::result<void> {
        if (status s = log->erase_thread(id); !s) return to_error(s);
        tell({committed_tick{id, {}, 0, wall_now(options), true}});
        return caf::unit;
      },
      [=](caf::put_atom, agent_config& a) -> caf::result<void> {
        if (status s = log->put_agent(a); !s) return to_error(s);
        return caf::unit;
      },
      [=](write_atom, journal_write& w) -> caf::result<void> {
        if (status s = w.fn(*log); !s) return to_error(s);
        return caf::unit;
      },
      [=](caf::close_atom) { self->quit(); },
      [=](caf::get_atom, stats_atom) {
        journal_stats s;
        s.log = log->counters();
        s.groups = *groups;
        s.queued_max = 1;
        return s;
      },
  };
}

}  // namespace

journal_actor spawn_journal(caf::actor_system& sys, event_log& log, journal_options options) {
  if (!options.detached) return sys.spawn(inline_journal, &log, options);
  // CAF 0.17 has no typed blocking actors: journal_loop::run receives exactly
  // journal_actor's messages (and journal_test asks each of them of both variants).
  return caf::actor_cast<journal_actor>(sys.spawn<caf::detached>([&log, options](caf::blocking_actor* self) {
    journal_loop loop{self, &log, options};
    loop.run();
  }));
}

status journal_commit(caf::actor_system& sys, const journal_actor& journal, tick& t) {
  caller self{sys};
  status result;
  self->request(journal, caf::infinite, commit_atom::value, t)
      .receive([&](uint64_t last_seq) { t.manifest.last_seq = last_seq; },
               [&](caf::error& e) { result = to_status(e); });
  return result;
}

status journal_commit_all(caf::actor_system& sys, const journal_actor& journal,
                          std::vector<tick>& ticks) {
  caller self{sys};
  status result;
  self->request(journal, caf::infinite, commit_all_atom::value, ticks)
      .receive(
          [&](std::vector<uint64_t>& seqs) {
            for (size_t i = 0; i < ticks.size() && i < seqs.size(); ++i)
              ticks[i].manifest.last_seq = seqs[i];
          },
          [&](caf::error& e) { result = to_status(e); });
  return result;
}

status journal_commit_effect(caf::actor_system& sys, const journal_actor& journal, effect_write& w) {
  return blocking_request(sys, journal, effect_atom::value, w);
}

status journal_erase(caf::actor_system& sys, const journal_actor& journal, const std::string& id) {
  return blocking_request(sys, journal, erase_atom::value, id);
}

status journal_run(caf::actor_system& sys, const journal_actor& journal, std::function<status(event_log&)> fn) {
  return blocking_request(sys, journal, write_atom::value, journal_write{std::move(fn)});
}

status journal_close(caf::actor_system& sys, const journal_actor& journal) {
  return blocking_request(sys, journal, caf::close_atom::value);
}

}  // namespace skein
