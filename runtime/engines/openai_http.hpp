// openai_http: what the built-in clients of OpenAI-compatible endpoints (the
// "openai" embedder and the "openai" engine) share — base_url parsing, the API
// key from the environment, the TLS client context and the peer checks of one
// connection, jittered backoff, Retry-After, and the server's error message as
// quoted in ours (cut, key masked).
//
// Internal to runtime/: no Beast or Asio here (the TLS context is only named),
// so including it costs nothing. Pure functions, thread-safe, except where said.
#pragma once

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <string_view>

#include "runtime/model/status.hpp"

namespace boost::asio::ssl {
class context;
}
struct ssl_st;

namespace skein::openai_http {

inline constexpr size_t error_text_bytes_max = 200;  // of a server's error message quoted in ours

// Where requests go: "http[s]://host[:port][/prefix]".
struct endpoint {
  bool tls = false;         // https://
  std::string host;
  std::string port;         // base_url's, else 80 (http) or 443 (https)
  std::string path_prefix;  // base_url's path, without a trailing slash ("" or "/v1")
};

// invalid_input naming the field `base_url` when the URL is not of that form.
status parse_base_url(std::string_view url, endpoint* out);

// The key in environment variable `env`. `required`: an unset variable is
// invalid_input naming the field `api_key_env` and the variable (never a key);
// otherwise an unset variable leaves *key empty. A variable set to "" means no
// key is sent (a local server that wants none).
status read_api_key(const std::string& env, bool required, std::string* key);

// The client side of TLS, one per client object: TLS 1.2 or later, the peer's
// chain verified against `ca_file` (a PEM file; empty: the system's trusted CAs).
// A bad ca_file is invalid_input naming the field `ca_file`. `who` starts messages.
status make_tls_context(const std::string& ca_file, std::string_view who,
                        std::unique_ptr<boost::asio::ssl::context>* out);

// Prepares one client connection before its handshake: SNI for a host name (RFC
// 6066 allows no IP literal), and the check that the certificate names `host`
// (a DNS name or an IP address), which OpenSSL then reports as "hostname
// mismatch" / "IP address mismatch". False when OpenSSL refuses.
bool prepare_tls_peer(ssl_st* ssl, const std::string& host);
// After a failed handshake: OpenSSL's reason the certificate failed
// verification, "" when it did not (the handshake failed for another reason).
std::string tls_verify_failure(const ssl_st* ssl);

// Backoff before attempt `attempt_no + 1` (attempt_no >= 1): backoff_ms doubled
// per attempt up to backoff_max_ms, times a jitter in [0.5, 1] that spreads the
// retries of many clients. `rng` belongs to the caller (not shared).
uint64_t backoff_delay_ms(uint64_t attempt_no, uint64_t backoff_ms, uint64_t backoff_max_ms, std::mt19937_64& rng);

// A Retry-After header's delay in ms: delta-seconds (fractions allowed); 0 for
// an HTTP date or anything else (the caller's own backoff applies then).
uint64_t parse_retry_after_ms(std::string_view value);

// `text` with every occurrence of `key` masked as "***" (nothing when key is "").
std::string scrub_key(std::string text, const std::string& key);

// A server's error body as quoted in ours: {"error":{"message":...}} or
// {"error":"..."} when the server says so, else the body itself; key masked, cut
// at error_text_bytes_max on a UTF-8 boundary. "(no body)" when empty.
std::string error_message(std::string_view body, const std::string& key);

}  // namespace skein::openai_http
