// The thread actor's subscribers: a subscription's backlog, read on a reader as
// stored, then the live events held behind it, in seq order; unsubscribing.
#include "actors/thread_actor_impl.hpp"

#include <algorithm>
#include <caf/event_based_actor.hpp>
#include <caf/send.hpp>

#include "actors/error.hpp"
#include "actors/reader_pool.hpp"

namespace skein {
namespace detail {

caf::result<uint64_t> thread_impl::subscribe(uint64_t from_seq, event_sink_actor& sink) {
  if (!sink) return to_error(status::invalid_input("subscribe: no sink"));
  // Only what was acknowledged: a commit in flight is delivered when its ack comes.
  const uint64_t last = manifest_.last_seq;
  monitor(sink);
  subscriber& added = subscribers_.emplace_back();
  added.sink = sink;
  added.from_seq = from_seq;
  if (from_seq > last) return last + 1;
  // The backlog is read on a reader, as stored; live events wait behind it.
  caf::response_promise promise = make_response_promise();
  subscriber& sub = subscribers_.back();
  sub.backlog_pending = true;
  sub.answer = promise;
  auto backlog = std::make_shared<std::vector<raw_event>>();
  const event_log* log = ctx_->log;
  const uint64_t first = std::max<uint64_t>(from_seq, 1);
  std::function<status()> job = [log, id = manifest_.id, first, last, backlog] {
    return log->read_events_raw(id, first, last - first + 1, backlog.get());
  };
  std::function<void(const status&)> done = [this, sink, last, backlog](const status& s) {
    on_backlog(sink, last, s, *backlog);
  };
  ctx_->readers->read_or_inline(this, std::move(job), std::move(done));
  return promise;
}

void thread_impl::on_backlog(const event_sink_actor& sink, uint64_t last, const status& read,
                              std::vector<raw_event>& backlog) {
  auto it = std::find_if(subscribers_.begin(), subscribers_.end(),
                         [&](const subscriber& s) { return s.sink == sink && s.backlog_pending; });
  if (it == subscribers_.end()) return;  // unsubscribed meanwhile (its answer went with it)
  caf::response_promise answer = it->answer;
  if (!read) {
    demonitor(it->sink.address());
    subscribers_.erase(it);
    answer.deliver(to_error(read));
    arm_idle_timer();
    return;
  }
  for (auto& r : backlog)
    if (r.seq <= last) send(sink, event_atom::value, manifest_.id, published_ptr{std::make_shared<const published_event>(std::move(r))});
  for (auto& p : it->held) send(sink, event_atom::value, manifest_.id, std::move(p));
  it->held.clear();
  it->backlog_pending = false;
  it->answer = caf::response_promise{};
  answer.deliver(last + 1);
}

void thread_impl::end_backlogs(const caf::error& err) {
  for (auto& sub : subscribers_)
    if (sub.backlog_pending && sub.answer.pending()) sub.answer.deliver(err);
}

void thread_impl::drop_subscriber(const caf::actor_addr& who) {
  auto it = std::find_if(subscribers_.begin(), subscribers_.end(),
                         [&](const subscriber& s) { return s.sink.address() == who; });
  if (it == subscribers_.end()) return;
  demonitor(it->sink.address());
  if (it->backlog_pending && it->answer.pending())
    it->answer.deliver(to_error(status::not_found("subscription ended before its backlog was read")));
  subscribers_.erase(it);
  arm_idle_timer();
}

}  // namespace detail
}  // namespace skein
