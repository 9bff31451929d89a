#include "runtime/host_sink.hpp"

#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/stateful_actor.hpp>

#include "actors/messages.hpp"
#include "actors/published_event.hpp"
#include "runtime/model/json_codec.hpp"

namespace skein {
namespace {

struct sink_state {
  event_sink sink;
  std::shared_ptr<std::atomic<uint64_t>> failures;
  bool ended = false;  // on_end was called: nothing more goes out

  void end(const std::string& reason) {
    if (ended) return;
    ended = true;
    if (sink.on_end) guard_host_call(failures, "a subscriber's on_end", [&] { sink.on_end(reason); });
  }

  void json_event(uint64_t seq, event_type type, const std::string& json) {
    if (!ended)
      guard_host_call(failures, "a subscriber's on_event_json", [&] { sink.on_event_json(seq, type, json); });
  }
  // A stored event that did not decode (null) ends the subscription saying so, rather than skip it.
  void decoded_event(const event* e) {
    if (ended) return;
    if (e == nullptr) return end("unreadable");
    guard_host_call(failures, "a subscriber's on_event", [&] { sink.on_event(*e); });
  }
};

caf::behavior sink_actor(caf::stateful_actor<sink_state>* self, event_sink sink,
                         std::shared_ptr<std::atomic<uint64_t>> failures, caf::actor watch) {
  self->state.sink = std::move(sink);
  self->state.failures = std::move(failures);
  if (watch) {
    self->monitor(watch);
    self->set_down_handler([self](caf::down_msg&) { self->state.end("unavailable"); });
  }
  return {
      [self](event_atom, std::string&, published_ptr& p) {
        auto& st = self->state;
        if (st.sink.on_event_json) st.json_event(p->seq(), p->type(), p->json());
        else if (st.sink.on_event && !st.ended) st.decoded_event(p->decoded());
      },
      [self](event_atom, std::string&, uint64_t seq, uint8_t type, std::string& json) {
        auto& st = self->state;
        if (type > static_cast<uint8_t>(event_type::signal)) return st.end("unreadable");
        if (st.sink.on_event_json) return st.json_event(seq, static_cast<event_type>(type), json);
        if (!st.sink.on_event || st.ended) return;
        event e;
        st.decoded_event(decode_event(json, &e).is_ok() ? &e : nullptr);
      },
      [self](delta_atom, std::string&, std::string& run_id, std::string& delta) {
        auto& st = self->state;
        if (st.sink.on_delta && !st.ended)
          guard_host_call(st.failures, "a subscriber's on_delta", [&] { st.sink.on_delta(run_id, delta); });
      },
      [self](caf::close_atom, std::string&, std::string& reason) { self->state.end(reason); },
  };
}

}  // namespace

std::shared_ptr<sink_gate> gate_sink(event_sink* sink) {
  auto gate = std::make_shared<sink_gate>();
  if (sink->on_event)
    sink->on_event = [gate, fn = std::move(sink->on_event)](const event& e) { gate->pass([&] { fn(e); }); };
  if (sink->on_event_json)
    sink->on_event_json = [gate, fn = std::move(sink->on_event_json)](uint64_t seq, event_type type,
                                                                      const std::string& json) {
      gate->pass([&] { fn(seq, type, json); });
    };
  if (sink->on_delta)
    sink->on_delta = [gate, fn = std::move(sink->on_delta)](const std::string& run_id, const std::string& delta) {
      gate->pass([&] { fn(run_id, delta); });
    };
  if (sink->on_end)
    sink->on_end = [gate, fn = std::move(sink->on_end)](const std::string& reason) { gate->pass([&] { fn(reason); }); };
  return gate;
}

caf::actor spawn_sink(caf::actor_system& sys, event_sink sink, std::shared_ptr<std::atomic<uint64_t>> failures,
                      caf::actor watch) {
  return sys.spawn(sink_actor, std::move(sink), std::move(failures), std::move(watch));
}

}  // namespace skein
