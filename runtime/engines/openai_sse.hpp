// sse_parser: the server-sent events framing (WHATWG HTML, "event stream
// interpretation") as the openai engine reads it, fed byte for byte as TCP
// delivers them.
//
//   stream  := line*
//   line    := (comment | field | "") eol      eol := CRLF | LF | CR
//   comment := ":" any*                        (ignored: keep-alives)
//   field   := name [":" [" "] value]          (only "data" matters here;
//                                               event, id, retry are ignored)
// An empty line ends an event: its data lines joined by LF go to on_event (an
// event without data lines is dropped). A line longer than line_bytes_max
// fails the feed. Internal to runtime/; a plain value, not thread-safe.
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "runtime/model/status.hpp"

namespace skein {

class sse_parser {
 public:
  // on_event returns a status: a failure stops the feed and is returned by it.
  sse_parser(size_t line_bytes_max, std::function<status(std::string_view data)> on_event)
      : line_bytes_max_(line_bytes_max), on_event_(std::move(on_event)) {}

  // Feeds the next bytes of the stream; any split is allowed.
  status feed(std::string_view bytes) {
    for (char ch : bytes) {
      if (after_cr_ && ch == '\n') {  // the LF of a CRLF: its line already ended at the CR
        after_cr_ = false;
        continue;
      }
      after_cr_ = ch == '\r';
      if (ch == '\r' || ch == '\n') {
        SKEIN_TRY(end_line());
        continue;
      }
      if (line_.size() >= line_bytes_max_)
        return status::invalid_input("a stream line is longer than line_bytes_max (" +
                                     std::to_string(line_bytes_max_) + " bytes)")
            .with_limit("line_bytes_max");
      line_.push_back(ch);
    }
    return status::ok();
  }

  // True when bytes of an unfinished line or event are held.
  bool pending() const { return !line_.empty() || has_data_; }

 private:
  status end_line() {
    std::string line = std::move(line_);
    line_.clear();
    if (line.empty()) {
      if (!has_data_) return status::ok();
      std::string data = std::move(data_);
      data_.clear();
      has_data_ = false;
      return on_event_(data);
    }
    if (line.front() == ':') return status::ok();
    size_t colon = line.find(':');
    std::string_view name = std::string_view{line}.substr(0, colon);
    std::string_view value = colon == std::string::npos ? std::string_view{} : std::string_view{line}.substr(colon + 1);
    if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
    if (name != "data") return status::ok();
    if (has_data_) data_.push_back('\n');
    if (data_.size() + value.size() > line_bytes_max_)
      return status::invalid_input("a stream event is longer than line_bytes_max (" +
                                   std::to_string(line_bytes_max_) + " bytes)")
          .with_limit("line_bytes_max");
    data_.append(value);
    has_data_ = true;
    return status::ok();
  }

  const size_t line_bytes_max_;
  std::function<status(std::string_view)> on_event_;
  std::string line_;
  std::string data_;
  bool has_data_ = false;
  bool after_cr_ = false;
};

}  // namespace skein
