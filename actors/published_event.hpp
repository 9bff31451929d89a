// published_event: one durable event on its way to a thread's subscribers,
// shared by all of them (DESIGN §4: encode an event once, not once per sink).
//
// Made from a committed event (live delivery) or from its stored bytes (a
// subscription's backlog, event_log::read_events_raw). Each sink takes the form
// it needs: the JSON (what encode_event writes and the log stores: SSE), or the
// decoded event (embedded subscribers). The missing form is made at most once,
// by the first sink that asks, on that sink's thread, never the thread actor's.
// Immutable to its holders; thread-safe.
#pragma once

#include <caf/allowed_unsafe_message_type.hpp>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "runtime/model/event.hpp"
#include "runtime/model/json_codec.hpp"
#include "runtime/model/status.hpp"

namespace skein {

class published_event {
 public:
  explicit published_event(event e);
  explicit published_event(raw_event r);
  published_event(const published_event&) = delete;
  published_event& operator=(const published_event&) = delete;

  uint64_t seq() const { return seq_; }
  event_type type() const { return type_; }
  // The stored JSON (encoded once if made from an event).
  const std::string& json() const;
  // The event (decoded once if made from stored bytes); null when the stored
  // bytes do not decode, with *why (may be null) saying why (corruption).
  const event* decoded(status* why = nullptr) const;

 private:
  uint64_t seq_ = 0;
  event_type type_ = event_type::message;
  mutable std::once_flag json_once_, event_once_;
  mutable std::string json_;
  mutable std::optional<event> event_;
  mutable status decode_status_;
};

using published_ptr = std::shared_ptr<const published_event>;

}  // namespace skein

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(skein::published_ptr)
