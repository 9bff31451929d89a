// The effect actor (effects.hpp): backlog, jobs, retries, stats. The work of
// each kind is in titles.cpp and embeddings.cpp.
#include "actors/effects/effects.hpp"

#include <algorithm>
#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/send.hpp>
#include <cassert>
#include <cstdio>
#include <deque>
#include <unordered_map>

#include "actors/error.hpp"
#include "persistence/event_log.hpp"
#include "runtime/model/ids.hpp"

namespace skein {
namespace {

using load_atom = caf::atom_constant<caf::atom("effload")>;
using scan_atom = effect_scan_atom;
using job_done_atom = caf::atom_constant<caf::atom("effdone")>;
using retry_atom = caf::atom_constant<caf::atom("effretry")>;
using job_timeout_atom = caf::atom_constant<caf::atom("efftime")>;
using unbusy_atom = caf::atom_constant<caf::atom("effunbusy")>;

// Host code and effect kinds never throw into an actor: an exception becomes a status.
template <class F>
status guarded(const char* what, F&& fn) {
  try {
    return fn();
  } catch (const std::exception& e) {
    return status::io_error(std::string{what} + " threw: " + e.what());
  } catch (...) {
    return status::io_error(std::string{what} + " threw a non-standard exception");
  }
}

// The reader: the blocking side of an effect (cursor, manifest, events, the scan at open).
caf::behavior effect_reader(caf::event_based_actor*, std::shared_ptr<const effect_kind> kind, event_log* log) {
  return {
      [=](load_atom, effect_job& job) -> caf::result<effect_job> {
        status s = guarded("effect load", [&]() -> status {
          SKEIN_TRY(log->read_effect_cursor(kind->name(), job.thread_id, &job.cursor));
          SKEIN_TRY(log->read_manifest(job.thread_id, &job.thread));
          // The stored last seq is at least what the feed announced: take it all.
          job.target = job.thread.last_seq;
          if (job.cursor >= job.target) return status::ok();
          return kind->load(*log, job);
        });
        if (!s) return to_error(s);
        return std::move(job);
      },
      [=](scan_atom) -> caf::result<std::vector<effect_lag_entry>> {
        std::vector<effect_lag_entry> out;
        if (status s = log->list_effect_lag(kind->name(), &out); !s) return to_error(s);
        return out;
      },
  };
}

struct backlog_entry {
  std::string agent_id;
  uint64_t target = 0;        // the last seq the feed announced
  int64_t oldest_ms = 0;      // commit time of the oldest commit no job has taken; 0: none
  int64_t job_oldest_ms = 0;  // the same, for the job in flight
  bool queued = false;
  bool in_flight = false;     // a job is loading, processing or writing
  bool processing = false;    // the kind's process() has not answered yet
  bool waiting_retry = false;
  bool erased = false;        // erased while a job was in flight: dropped when it ends
  uint32_t failures = 0;      // consecutive
  uint64_t gen = 0;           // names the job in flight or the retry timer
  effect_job job;
  std::unique_ptr<call_handle> handle;
};

class effect_actor : public caf::event_based_actor {
 public:
  effect_actor(caf::actor_config& cfg, std::shared_ptr<const effect_kind> kind, event_log* log,
               journal_actor journal, directory_actor directory, effects_config config)
      : caf::event_based_actor(cfg), kind_(std::move(kind)), name_(kind_->name()), log_(log),
        journal_(std::move(journal)), directory_(std::move(directory)), config_(std::move(config)) {}

  const char* name() const override { return "skein.effect"; }

  caf::behavior make_behavior() override {
    if (config_.detached_readers)
      reader_ = spawn<caf::detached + caf::linked>(effect_reader, kind_, log_);
    else
      reader_ = spawn<caf::linked>(effect_reader, kind_, log_);
    // Listen first, then scan: a commit after the registration is in the feed,
    // one before it is in the scan (both may hold it: noting it twice is harmless).
    request(journal_, caf::infinite, listen_atom::value, caf::actor_cast<caf::actor>(this))
        .then([this] { catch_up(); }, [this](caf::error& e) { last_error_ = to_status(e).to_string(); });
    return {
        [this](committed_atom, std::vector<committed_tick>& feed) {
          if (feed.size() >= config_.busy_group_ticks) saturated();
          for (auto& c : feed) {
            if (c.erased) erased(c.thread_id);
            else note(c.thread_id, c.agent_id, c.last_seq, c.committed_at_ms);
          }
          pump();
        },
        [this](job_done_atom, std::string& id, uint64_t gen, effect_result& r) { processed(id, gen, std::move(r)); },
        [this](retry_atom, std::string& id, uint64_t gen) {
          auto it = backlog_.find(id);
          if (it == backlog_.end() || it->second.gen != gen || !it->second.waiting_retry) return;
          it->second.waiting_retry = false;
          enqueue(id, it->second);
          pump();
        },
        [this](job_timeout_atom, std::string& id, uint64_t gen) {
          auto it = backlog_.find(id);
          if (it == backlog_.end() || it->second.gen != gen || !it->second.processing) return;
          it->second.processing = false;
          failed(id, gen,
                 status::overloaded(name_ + " effect: thread " + id + " took longer than job_timeout (" +
                                    std::to_string(config_.job_timeout.count()) + " ms)")
                     .with_limit("job_timeout"));
        },
        [this](unbusy_atom) {
          // One busy_hold with no saturated journal write ends the busy mode.
          if (saturated_in_hold_) delayed_send(this, config_.busy_hold, unbusy_atom::value);
          else busy_ = false;
          saturated_in_hold_ = false;
          pump();
        },
        [this](caf::get_atom, stats_atom) { return stats(); },
        [this](scan_atom) { catch_up(); },
    };
  }

  void on_exit() override {
    for (auto& [id, e] : backlog_) cancel(e);
    backlog_.clear();
  }

 private:
  int64_t wall_now() const { return config_.wall_clock ? config_.wall_clock() : now_ms(); }

  // One scan at a time: asked again meanwhile (partitions taken one after
  // another), one more follows it.
  void catch_up() {
    if (scanning_) {
      rescan_ = true;
      return;
    }
    scanning_ = true;
    request(reader_, caf::infinite, scan_atom::value)
        .then(
            [this](std::vector<effect_lag_entry>& lagging) {
              for (auto& l : lagging) note(l.thread_id, l.agent_id, l.last_seq, l.updated_at_ms);
              pump();
              scan_done();
            },
            [this](caf::error& e) {
              scan_done();
              // Without the scan, threads committed before the open wait for their next commit.
              last_error_ = "catch-up scan: " + to_status(e).to_string();
              std::fprintf(stderr, "skein: %s effect: %s\n", name_.c_str(), last_error_.c_str());
            });
  }

  bool served(const std::string& id) const { return !config_.serves || config_.serves(id); }

  void scan_done() {
    scanning_ = false;
    if (std::exchange(rescan_, false)) catch_up();
  }

  void note(const std::string& id, const std::string& agent, uint64_t last_seq, int64_t at_ms) {
    if (!served(id)) return;  // its leader's effects do it
    auto& e = backlog_[id];
    if (e.agent_id.empty()) e.agent_id = agent;
    if (last_seq > e.target || (e.target == 0 && !e.in_flight)) {
      e.target = std::max(e.target, last_seq);
      if (e.oldest_ms == 0) e.oldest_ms = at_ms;
    }
    enqueue(id, e);
  }

  void enqueue(const std::string& id, backlog_entry& e) {
    if (e.queued || e.in_flight || e.waiting_retry || e.erased) return;
    e.queued = true;
    ready_.push_back(id);
  }

  // A journal write saturated by runs: narrow to busy width for at least a busy_hold.
  void saturated() {
    if (busy_) {
      saturated_in_hold_ = true;
      return;
    }
    busy_ = true;
    delayed_send(this, config_.busy_hold, unbusy_atom::value);
  }

  void pump() {
    size_t width = busy_ ? config_.busy_jobs_in_flight_max : config_.jobs_in_flight_max;
    while (in_flight_ < std::max<size_t>(1, width) && !ready_.empty()) {
      std::string id = std::move(ready_.front());
      ready_.pop_front();
      auto it = backlog_.find(id);
      if (it == backlog_.end() || !it->second.queued) continue;
      it->second.queued = false;
      start(id, it->second);
    }
  }

  void start(const std::string& id, backlog_entry& e) {
    assert(!e.in_flight);  // one job per thread at a time: the cursor rule relies on it
    e.in_flight = true;
    ++in_flight_;
    uint64_t gen = e.gen = ++gens_;
    e.job_oldest_ms = e.oldest_ms;
    e.oldest_ms = 0;
    with_agent(e.agent_id, id, gen, [this, id, gen](agent_spec_ptr agent) {
      effect_job job;
      job.thread_id = id;
      job.agent = std::move(agent);
      request(reader_, caf::infinite, load_atom::value, std::move(job))
          .then([this, id, gen](effect_job& j) { loaded(id, gen, std::move(j)); },
                [this, id, gen](caf::error& err) { failed(id, gen, to_status(err)); });
    });
  }

  template <class F>
  void with_agent(const std::string& agent_id, const std::string& id, uint64_t gen, F fn) {
    if (auto it = agents_.find(agent_id); it != agents_.end()) {
      fn(it->second);
      return;
    }
    request(directory_, caf::infinite, agent_atom::value, agent_id, caf::get_atom::value)
        .then(
            [this, agent_id, fn](agent_spec_ptr& spec) {
              agents_[agent_id] = spec;  // agents are immutable once created
              fn(spec);
            },
            [this, id, gen](caf::error& err) { failed(id, gen, to_status(err)); });
  }

  backlog_entry* current(const std::string& id, uint64_t gen) {
    auto it = backlog_.find(id);
    if (it == backlog_.end() || it->second.gen != gen || !it->second.in_flight) return nullptr;
    return &it->second;
  }

  void loaded(const std::string& id, uint64_t gen, effect_job job) {
    backlog_entry* e = current(id, gen);
    if (e == nullptr) return;
    if (e->erased) {
      finish(id, *e, 0);
      return;
    }
    if (job.cursor >= job.target) {  // done already (a manifest-only tick, a catch-up race)
      e->target = std::min(e->target, job.cursor);
      finish(id, *e, job.cursor);
      return;
    }
    e->job = job;
    e->processing = true;
    delayed_send(this, config_.job_timeout, job_timeout_atom::value, id, gen);
    auto self = caf::actor_cast<caf::actor>(this);
    std::unique_ptr<call_handle> handle;
    status s = guarded("effect process", [&]() -> status {
      handle = kind_->process(std::move(job), [self, id, gen](effect_result r) {
        caf::anon_send(self, job_done_atom::value, id, gen, std::move(r));
      });
      return status::ok();
    });
    if (!s) {
      e->processing = false;
      failed(id, gen, s);
      return;
    }
    e->handle = std::move(handle);
  }

  void processed(const std::string& id, uint64_t gen, effect_result r) {
    backlog_entry* e = current(id, gen);
    if (e == nullptr || !e->processing) return;  // timed out or erased meanwhile
    e->processing = false;
    e->handle.reset();
    if (!r.result) {
      failed(id, gen, r.result);
      return;
    }
    if (e->erased) {
      finish(id, *e, 0);
      return;
    }
    r.write.effect = name_;
    r.write.thread_id = id;
    if (r.title) {
      write_title(id, gen, std::move(r));
      return;
    }
    if (r.compaction) {
      write_compaction(id, gen, std::move(r));
      return;
    }
    effect_write w = r.write;
    request(journal_, caf::infinite, effect_atom::value, std::move(w))
        .then([this, id, gen, r]() mutable { written(id, gen, std::move(r)); },
              [this, id, gen](caf::error& err) { failed(id, gen, to_status(err)); });
  }

  // A manifest change goes through the thread actor, the only writer of a manifest.
  void write_title(const std::string& id, uint64_t gen, effect_result r) {
    request(directory_, caf::infinite, resolve_atom::value, id)
        .then(
            [this, id, gen, r](thread_actor& thread) mutable {
              std::string title = *r.title;
              uint64_t cursor = r.write.cursor;
              request(thread, caf::infinite, title_atom::value, std::move(title), cursor)
                  .then(
                      [this, id, gen, r](bool set) mutable {
                        if (!set) ++discarded_;  // a title landed first (a user's): it stays
                        written(id, gen, std::move(r));
                      },
                      [this, id, gen](caf::error& err) { failed(id, gen, to_status(err)); });
            },
            [this, id, gen](caf::error& err) { failed(id, gen, to_status(err)); });
  }

  // A compaction is the thread's own tick, made by its actor between runs. When
  // it wrote nothing (under the threshold by its turn) the cursor goes through
  // the journal like any effect write.
  void write_compaction(const std::string& id, uint64_t gen, effect_result r) {
    request(directory_, caf::infinite, resolve_atom::value, id)
        .then(
            [this, id, gen, r](thread_actor& thread) mutable {
              compact_request req = *r.compaction;
              request(thread, caf::infinite, compact_atom::value, std::move(req))
                  .then(
                      [this, id, gen, r](compact_result& c) mutable {
                        if (c.compacted || c.failed) {  // its tick carried the cursor
                          if (c.failed) {  // visible, not retried: the thread has its signal
                            ++failed_;
                            last_error_ = "thread " + id + ": compaction: " + c.reason;
                          }
                          written(id, gen, std::move(r));
                          return;
                        }
                        r.compaction.reset();
                        effect_write w = r.write;
                        request(journal_, caf::infinite, effect_atom::value, std::move(w))
                            .then([this, id, gen, r]() mutable { written(id, gen, std::move(r)); },
                                  [this, id, gen](caf::error& err) { failed(id, gen, to_status(err)); });
                      },
                      [this, id, gen](caf::error& err) { failed(id, gen, to_status(err)); });
            },
            [this, id, gen](caf::error& err) { failed(id, gen, to_status(err)); });
  }

  void written(const std::string& id, uint64_t gen, effect_result r) {
    backlog_entry* e = current(id, gen);
    if (e == nullptr) return;
    ++done_;
    if (e->job_oldest_ms > 0) sample_lag(static_cast<double>(wall_now() - e->job_oldest_ms) / 1000.0);
    status hooks = guarded("effect hook", [&]() -> status {
      kind_->on_durable(e->job, r);
      return status::ok();
    });
    if (!hooks) {
      ++failed_;  // the write stands; only the host's hook failed
      last_error_ = hooks.to_string();
    }
    e->failures = 0;
    finish(id, *e, r.write.cursor);
  }

  // The job of `id` ended with the cursor at `cursor`: more work queues it again.
  void finish(const std::string& id, backlog_entry& e, uint64_t cursor) {
    e.in_flight = false;
    e.processing = false;
    e.handle.reset();
    e.job = effect_job{};
    --in_flight_;
    // A commit noted while the job ran raised the target: the cursor says whether it is covered.
    if (e.erased || cursor >= e.target) {
      backlog_.erase(id);
      pump();
      return;
    }
    if (e.oldest_ms == 0) e.oldest_ms = e.job_oldest_ms;
    enqueue(id, e);
    pump();
  }

  void failed(const std::string& id, uint64_t gen, const status& s) {
    backlog_entry* e = current(id, gen);
    if (e == nullptr) return;
    ++failed_;
    last_error_ = "thread " + id + ": " + s.to_string();
    cancel(*e);
    e->in_flight = false;
    e->processing = false;
    e->job = effect_job{};
    --in_flight_;
    // The thread is gone, or led elsewhere now (its next leader catches up): nothing to retry.
    if (s.code() == errc::not_found || e->erased || !served(id)) {
      backlog_.erase(id);
      pump();
      return;
    }
    if (e->oldest_ms == 0) e->oldest_ms = e->job_oldest_ms;
    ++e->failures;
    ++retries_;
    auto delay = config_.retry_delay_min;
    for (uint32_t i = 1; i < e->failures && delay < config_.retry_delay_max; ++i) delay *= 2;
    delay = std::min(delay, config_.retry_delay_max);
    e->waiting_retry = true;
    e->gen = ++gens_;
    delayed_send(this, delay, retry_atom::value, id, e->gen);
    pump();
  }

  void erased(const std::string& id) {
    auto it = backlog_.find(id);
    if (it != backlog_.end()) {
      if (it->second.in_flight) {
        it->second.erased = true;
        cancel(it->second);
      } else {
        backlog_.erase(it);
      }
    }
    status s = guarded("on_erased hook", [&]() -> status {
      kind_->on_erased(id);
      return status::ok();
    });
    if (!s) {
      ++failed_;
      last_error_ = s.to_string();
    }
  }

  static void cancel(backlog_entry& e) {
    if (!e.handle) return;
    try {
      e.handle->cancel();
    } catch (...) {
      // a handle that throws on cancel: the call's late answer is dropped by gen
    }
    e.handle.reset();
  }

  void sample_lag(double seconds) {
    if (config_.lag_window == 0) return;
    if (lags_.size() < config_.lag_window) lags_.push_back(seconds);
    else lags_[lag_next_++ % config_.lag_window] = seconds;
  }

  effect_stats stats() const {
    effect_stats s;
    s.effect = name_;
    s.backlog = backlog_.size();
    s.done = done_;
    s.failed = failed_;
    s.retries = retries_;
    s.discarded = discarded_;
    s.last_error = last_error_;
    if (!lags_.empty()) {
      std::vector<double> sorted = lags_;
      std::sort(sorted.begin(), sorted.end());
      auto at = [&](double q) { return sorted[std::min(sorted.size() - 1, static_cast<size_t>(q * sorted.size()))]; };
      s.lag_p50_s = at(0.50);
      s.lag_p99_s = at(0.99);
    }
    return s;
  }

  std::shared_ptr<const effect_kind> kind_;
  std::string name_;
  event_log* log_;
  journal_actor journal_;
  directory_actor directory_;
  effects_config config_;
  caf::actor reader_;
  std::unordered_map<std::string, backlog_entry> backlog_;
  std::deque<std::string> ready_;
  std::unordered_map<std::string, agent_spec_ptr> agents_;
  size_t in_flight_ = 0;
  // Foreground first (effects_config::busy_group_ticks): busy_ narrows pump() and
  // has an unbusy timer pending; saturated_in_hold_ records a saturated write since
  // that timer was set.
  bool busy_ = false, saturated_in_hold_ = false;
  uint64_t gens_ = 0;
  uint64_t done_ = 0, failed_ = 0, retries_ = 0, discarded_ = 0;
  bool scanning_ = false, rescan_ = false;  // a catch-up scan in flight; another asked meanwhile
  std::string last_error_;
  std::vector<double> lags_;
  size_t lag_next_ = 0;
};

}  // namespace

caf::actor spawn_effect(caf::actor_system& sys, std::shared_ptr<const effect_kind> kind, event_log& log,
                        journal_actor journal, directory_actor directory, effects_config config) {
  return sys.spawn<effect_actor>(std::move(kind), &log, std::move(journal), std::move(directory),
                                 std::move(config));
}

}  // namespace skein
