// The built-in "openai" embedder: any OpenAI-compatible embeddings endpoint,
//   POST {base_url}/v1/embeddings  {"model": m, "input": [text, ...]}
//   -> {"data": [{"index": i, "embedding": [float, ...]}, ...]}
//
// Config (JSON object):
//   base_url     "http[s]://host[:port][/prefix]" (required). https: TLS 1.2 or later,
//                the server's certificate chain verified and its name (or IP) checked
//                against base_url's host; SNI is sent for a host name.
//   ca_file      https only: a PEM file of the CAs to trust instead of the system's
//                (a private CA). Read at construction: missing or without a
//                certificate, the config is refused naming ca_file.
//   model        string (required)
//   dims         the vector size the model answers (required): a reply of other
//                dims is an error naming both
//   api_key_env  the environment variable holding the key (default OPENAI_API_KEY);
//                sent as "Authorization: Bearer <key>" when set and not empty. The
//                key is never written into an error or a log: any text the server
//                sends back has it masked.
//   batch_max    texts per request (default 64): queued calls are merged up to it
//   timeout_ms   one request, connect (and TLS handshake) to last byte (default 30000)
//   retries      attempts per request, the first included (default 4)
//   backoff_ms   first retry delay (default 200), doubled each attempt up to
//                backoff_max_ms (default 10000), with jitter (x0.5..1)
//   retry_after_max_ms  the longest Retry-After honored (default 30000)
//   queue_max    embed() calls waiting (default 1024): past it, overloaded at once
// 429, 5xx, timeouts and connection errors are retried (Retry-After honored,
// bounded); any other 4xx fails at once with the server's error message (cut);
// a reply that does not parse fails at once, and so does a certificate that
// fails verification (it would come back the same). Vectors are L2-normalized here.
//
// One worker thread per embedder object sends the requests; embed() only queues.
// The TLS context (trusted CAs, protocol floor) is built once per object.
#pragma once

#include <memory>
#include <string_view>

#include "runtime/model/embedder.hpp"

namespace skein {

status make_openai_embedder(std::string_view config_json, timer_service& timers, std::shared_ptr<embedder>* out);

}  // namespace skein
