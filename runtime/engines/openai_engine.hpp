// The built-in "openai" engine: any OpenAI-compatible chat-completions endpoint,
//   POST {base_url}/chat/completions   (base_url ".../v1" → ".../v1/chat/completions")
//
// Config (the agent's engine_config; a thread's engine_config patch merges in
// first, RFC 7386). Unknown fields and wrong types are refused naming the field.
//   base_url        "http[s]://host[:port][/prefix]" (required); https as for the
//                   openai embedder: TLS 1.2+, chain and host name verified, SNI.
//   model           string (required)
//   api_key_env     the environment variable holding the key (default
//                   OPENAI_API_KEY). Unset: the config is refused naming it; set
//                   to "": no Authorization header (a local server). Read when the
//                   engine is built; never logged, stored or quoted (masked in any
//                   text the server sends back).
//   ca_file         https only: PEM file of the CAs to trust instead of the system's
//   temperature     number, sent when given
//   max_tokens      uint, sent when given
//   stream          bool (default true): SSE with stream_options.include_usage
//   timeout_ms      connect (and TLS handshake), and each read after it (default 120000)
//   retries         retries after a call's first attempt (default 4; 0: none; at
//                   most 100). Unlike the embedder's, which counts attempts.
//   backoff_ms      first retry delay (default 500), doubled per attempt up to
//   backoff_max_ms  (default 20000), jittered (x0.5..1)
//   retry_after_max_ms  the longest Retry-After honoured (default 60000)
//   reply_bytes_max one reply's body (default 8 MiB)
//   prices          {"<model>": {"input_per_mtok": number, "output_per_mtok": number}}:
//                   the step's cost_usd from its usage, for the configured model
//
// Retried, with backoff: 429, 5xx, timeouts and connection errors — but never once
// the reply has begun (any content, reasoning or tool-call delta): a partial answer
// is a failure. Any other 4xx fails at once with the server's error message (cut,
// key masked); so do a malformed reply, a reply past a limit (named), and a TLS
// certificate that fails verification.
//
// Messages from the working conversation: the system prompt and system messages
// → "system"; user messages → "user"; a step's text (assistant_text) and its tool
// calls → one "assistant" message with "tool_calls"; tool results → "tool"
// messages with "tool_call_id"; the final assistant message → "assistant"; a
// compaction → its compacted events, mapped the same way. Thinking is not sent
// back (chat completions has no field for it). Title and summary calls add a
// last user message asking for the title or summary, and offer no tools.
//
// Thread-safety: start() may be called from any thread. One I/O thread per engine
// object (started at the first call) runs every call on an io_context the engine
// owns; each call opens its own connection. Cancelling a call closes its
// connection at once; destroying the engine cancels every call in flight and
// waits for its thread: no callback runs after the destructor returns.
#pragma once

#include <memory>
#include <string_view>

#include "runtime/model/engine.hpp"

namespace skein {

status make_openai_engine(std::string_view config_json, timer_service& timers, std::shared_ptr<engine>* out);

}  // namespace skein
