// One-event ticks through the journal actor, as the append and history workloads
// commit them: one driver actor per thread with one commit in flight each, so that
// group commit works as in real use.
#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/allowed_unsafe_message_type.hpp>
#include <caf/atom.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/stateful_actor.hpp>

#include "actors/error.hpp"
#include "actors/journal.hpp"
#include "bench/workloads.hpp"
#include "persistence/event_log.hpp"

namespace skein::bench {

// A driver's state, handed back whole to the waiter when its thread is done (or failed).
struct driver_state {
  size_t index = 0;                   // of the thread in the pass
  manifest m;                         // as after the last acknowledged tick
  size_t left = 0;                    // ticks to commit still
  const std::function<event(size_t, uint64_t)>* make_event = nullptr;  // borrowed
  progress* bar = nullptr;                                              // borrowed
  journal_actor journal;
  caf::actor waiter;
  bench_clock::time_point sent, last_ack;
  std::vector<int64_t> latencies_ns;  // send to ack, one per acknowledged tick
  std::string error;                  // empty: every tick acknowledged
};

}  // namespace skein::bench

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(skein::bench::driver_state)

namespace skein::bench {
namespace {

using ticks_done_atom = caf::atom_constant<caf::atom("ticksdone")>;
using driver_actor = caf::stateful_actor<driver_state>;

void commit_next(driver_actor* self) {
  auto& st = self->state;
  auto finish = [self] {
    caf::actor waiter = self->state.waiter;  // the state moves into the message
    self->send(waiter, ticks_done_atom::value, std::move(self->state));
    self->quit();
  };
  uint64_t seq = st.m.last_seq + 1;
  tick t;
  t.thread_id = st.m.id;
  t.create = seq == 1;
  t.events.push_back((*st.make_event)(st.index, seq));
  st.m.updated_at_ms = t.events.back().ts_ms;
  t.manifest = st.m;  // the log sets its last_seq from the events
  st.sent = bench_clock::now();
  self->request(st.journal, caf::infinite, commit_atom::value, std::move(t))
      .then(
          [self, seq, finish](uint64_t last_seq) {
            auto& st = self->state;
            st.last_ack = bench_clock::now();
            st.latencies_ns.push_back((st.last_ack - st.sent).count());
            if (st.bar != nullptr) st.bar->advance();
            if (last_seq != seq) {
              st.error = "thread " + st.m.id + ": journal acknowledged last_seq " + std::to_string(last_seq) +
                         ", expected " + std::to_string(seq);
              return finish();
            }
            st.m.last_seq = last_seq;
            if (--st.left == 0) return finish();
            commit_next(self);
          },
          [self, finish](caf::error& e) {
            self->state.error = to_status(e).to_string();
            finish();
          });
}

}  // namespace

status drive_ticks(caf::actor_system& sys, const journal_actor& journal, manifest* threads, size_t count,
                   size_t ticks, const std::function<event(size_t, uint64_t)>& make_event, progress* bar,
                   std::vector<int64_t>* latencies_ns, double* seconds) {
  caf::scoped_actor waiter{sys};
  auto start = bench_clock::now();
  auto last_ack = start;
  for (size_t i = 0; i < count; ++i) {
    auto d = sys.spawn([&, i](driver_actor* self) -> caf::behavior {
      self->state = {i, threads[i], ticks, &make_event, bar, journal, caf::actor_cast<caf::actor>(waiter), {}, {},
                     {}, {}};
      self->state.latencies_ns.reserve(ticks);
      commit_next(self);
      return {};  // no messages of its own: it lives on its pending request
    });
    waiter->monitor(d);  // a driver killed by an exception must not hang the bench
  }
  std::string first_error;
  uint64_t failed = 0;
  for (size_t finished = 0; finished < count;) {
    waiter->receive(
        [&](ticks_done_atom, driver_state& r) {
          ++finished;
          last_ack = std::max(last_ack, r.last_ack);
          threads[r.index] = std::move(r.m);
          latencies_ns->insert(latencies_ns->end(), r.latencies_ns.begin(), r.latencies_ns.end());
          if (!r.error.empty() && failed++ == 0) first_error = r.error;
        },
        [&](caf::down_msg& d) {
          if (!d.reason) return;  // a normal exit follows the driver's done message
          ++finished;
          if (failed++ == 0) first_error = "driver actor died: " + sys.render(d.reason);
        });
  }
  *seconds += seconds_since(start, last_ack);
  if (failed > 0) return status::io_error(std::to_string(failed) + " thread(s) failed; first: " + first_error);
  return status::ok();
}

status with_journal(event_log& log, uint64_t ticks,
                    const std::function<status(caf::actor_system&, const journal_actor&)>& fn) {
  caf::actor_system_config cfg;
  register_skein_types(cfg);
  caf::actor_system sys{cfg};
  auto journal = spawn_journal(sys, log);
  status s = fn(sys, journal);
  status closed = journal_close(sys, journal);
  SKEIN_TRY(s);
  if (!closed) return status{closed.code(), "closing the journal: " + closed.message()};
  log_counters c = log.counters();
  if (c.commits != ticks || c.events != ticks || c.failed != 0 || c.rejected != 0)
    return status::corruption("lost writes: event log counted " + std::to_string(c.commits) + " commits, " +
                              std::to_string(c.events) + " events, " + std::to_string(c.failed) + " failed, " +
                              std::to_string(c.rejected) + " rejected; expected " + std::to_string(ticks) +
                              " commits and events");
  return status::ok();
}

}  // namespace skein::bench
