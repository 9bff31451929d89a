#include "actors/published_event.hpp"

namespace skein {

published_event::published_event(event e) : seq_(e.seq), type_(e.type), event_(std::move(e)) {
  // The event form is there already; a later decoded() must not try to decode.
  std::call_once(event_once_, [] {});
}

published_event::published_event(raw_event r) : seq_(r.seq), type_(r.type), json_(std::move(r.json)) {
  std::call_once(json_once_, [] {});
}

const std::string& published_event::json() const {
  std::call_once(json_once_, [this] {
    // A committed event was storable (the journal encoded it): this cannot fail.
    encode_event(*event_, &json_).ignore();
  });
  return json_;
}

const event* published_event::decoded(status* why) const {
  std::call_once(event_once_, [this] {
    event e;
    decode_status_ = decode_event(json_, &e);
    if (decode_status_) event_ = std::move(e);
    else
      decode_status_ = status::corruption("events seq " + std::to_string(seq_) + ": " + decode_status_.message());
  });
  if (!event_ && why != nullptr) *why = decode_status_;
  return event_ ? &*event_ : nullptr;
}

}  // namespace skein
