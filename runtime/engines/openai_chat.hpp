// openai_chat: the chat-completions protocol of the openai engine, apart from
// its transport — the engine's config, the request body built from a working
// conversation, and the reader that assembles a step from a reply (streamed
// chunks or one body). Internal to runtime/: no Beast, no I/O.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "runtime/model/engine.hpp"
#include "runtime/engines/openai_http.hpp"

namespace skein::openai_chat {

inline constexpr size_t line_bytes_max = 1 << 20;  // one SSE line, and one event's data (one chunk)
inline constexpr size_t reply_depth_max = 16;      // nesting of a chunk or a whole reply (json_limits' count)
inline constexpr size_t tool_calls_max = 128;      // tool calls in one reply
inline constexpr uint64_t retries_max = 100;       // a config's retries
inline constexpr const char* who = "openai engine";

struct model_price {
  double input_per_mtok = 0;
  double output_per_mtok = 0;
};

struct openai_config {
  openai_http::endpoint at;
  std::string model;
  std::string api_key_env = "OPENAI_API_KEY";
  std::string api_key;  // read once, when the engine is built
  std::string ca_file;
  std::optional<double> temperature;
  std::optional<uint64_t> max_tokens;
  bool stream = true;
  uint64_t timeout_ms = 120000;
  uint64_t retries = 4;
  uint64_t backoff_ms = 500;
  uint64_t backoff_max_ms = 20000;
  uint64_t retry_after_max_ms = 60000;
  uint64_t reply_bytes_max = 8 << 20;
  std::map<std::string, model_price, std::less<>> prices;
};

// The engine's config (the grammar in openai_engine.hpp); the key is read from
// its variable here. Errors name the field.
status parse_config(std::string_view json_text, openai_config* c);

// The request body of one call (model, messages, tools, settings, stream).
status build_body(const openai_config& c, const engine_request& req, std::string* out);

// Assembles one step from a streamed reply's chunks (or a whole reply): text,
// reasoning, tool calls by index, usage. Every chunk is untrusted.
class reply_reader {
 public:
  // `delta` hears each piece of content as it arrives; `c` outlives the reader.
  reply_reader(const openai_config& c, std::function<void(std::string)> delta);
  ~reply_reader();

  bool done() const;      // data: [DONE] seen
  bool finished() const;  // a finish_reason seen
  bool started() const;   // any content, reasoning or tool call seen
  status on_event(std::string_view data);  // one SSE event's data
  status on_whole(std::string_view body);  // a reply that was not streamed
  engine_step take_step();

 private:
  class impl;
  std::unique_ptr<impl> impl_;
};

}  // namespace skein::openai_chat
