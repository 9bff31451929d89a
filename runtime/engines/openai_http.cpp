#include "runtime/engines/openai_http.hpp"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509_vfy.h>
#include <openssl/x509v3.h>

#include <boost/asio/ip/address.hpp>
#include <boost/asio/ssl/context.hpp>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <filesystem>

#include "runtime/model/json_reader.hpp"

namespace skein::openai_http {

status parse_base_url(std::string_view url, endpoint* c) {
  std::string_view rest;
  if (url.rfind("http://", 0) == 0) {
    rest = url.substr(7);
    c->tls = false;
  } else if (url.rfind("https://", 0) == 0) {
    rest = url.substr(8);
    c->tls = true;
  } else {
    return status::invalid_input("base_url: must start with http:// or https://").with_field("base_url");
  }
  c->port = c->tls ? "443" : "80";
  size_t slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  c->path_prefix = slash == std::string_view::npos ? "" : std::string{rest.substr(slash)};
  while (!c->path_prefix.empty() && c->path_prefix.back() == '/') c->path_prefix.pop_back();
  size_t colon = authority.rfind(':');
  c->host = std::string{authority.substr(0, colon)};
  if (colon != std::string_view::npos) {
    c->port = std::string{authority.substr(colon + 1)};
    unsigned port = 0;
    auto r = std::from_chars(c->port.data(), c->port.data() + c->port.size(), port);
    if (c->port.empty() || r.ec != std::errc{} || r.ptr != c->port.data() + c->port.size() || port == 0 ||
        port > 65535)
      return status::invalid_input("base_url: bad port '" + quote_input(c->port, 16) + "'").with_field("base_url");
  }
  if (c->host.empty()) return status::invalid_input("base_url: no host").with_field("base_url");
  return status::ok();
}

status read_api_key(const std::string& env, bool required, std::string* key) {
  key->clear();
  if (const char* v = std::getenv(env.c_str())) {
    *key = v;
    return status::ok();
  }
  if (!required) return status::ok();
  return status::invalid_input("api_key_env: the environment variable " + quote_input(env, 64) +
                               " is not set (set it to the API key, or to \"\" for a server that wants none)")
      .with_field("api_key_env");
}

status make_tls_context(const std::string& ca_file, std::string_view who,
                        std::unique_ptr<boost::asio::ssl::context>* out) {
  namespace ssl = boost::asio::ssl;
  const std::string w{who};
  try {
    auto ctx = std::make_unique<ssl::context>(ssl::context::tls_client);
    if (SSL_CTX_set_min_proto_version(ctx->native_handle(), TLS1_2_VERSION) != 1)
      return status::io_error(w + ": cannot require TLS 1.2");
    ctx->set_verify_mode(ssl::verify_peer);
    boost::system::error_code ec;
    if (ca_file.empty()) {
      ctx->set_default_verify_paths(ec);
      if (ec) return status::io_error(w + ": cannot load the system's trusted CAs: " + ec.message());
    } else {
      std::error_code fs_ec;
      if (!std::filesystem::is_regular_file(ca_file, fs_ec))
        return status::invalid_input("config.ca_file: '" + ca_file + "' is not a file").with_field("ca_file");
      ctx->load_verify_file(ca_file, ec);
      if (ec)
        return status::invalid_input("config.ca_file: '" + ca_file + "' holds no PEM certificate: " + ec.message())
            .with_field("ca_file");
    }
    *out = std::move(ctx);
    return status::ok();
  } catch (const boost::system::system_error& e) {  // SSL_CTX_new failed: OpenSSL itself is unusable
    return status::io_error(w + ": cannot set up TLS: " + e.what());
  }
}

bool prepare_tls_peer(ssl_st* ssl, const std::string& host) {
  boost::system::error_code addr_ec;
  boost::asio::ip::make_address(host, addr_ec);
  if (!addr_ec) return X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host.c_str()) == 1;
  return SSL_set_tlsext_host_name(ssl, host.c_str()) == 1 && SSL_set1_host(ssl, host.c_str()) == 1;
}

std::string tls_verify_failure(const ssl_st* ssl) {
  long v = SSL_get_verify_result(ssl);
  return v == X509_V_OK ? std::string{} : std::string{X509_verify_cert_error_string(v)};
}

uint64_t backoff_delay_ms(uint64_t attempt_no, uint64_t backoff_ms, uint64_t backoff_max_ms, std::mt19937_64& rng) {
  double base = static_cast<double>(backoff_ms) * std::pow(2.0, static_cast<double>(attempt_no - 1));
  base = std::min(base, static_cast<double>(backoff_max_ms));
  std::uniform_real_distribution<double> jitter(0.5, 1.0);
  return static_cast<uint64_t>(base * jitter(rng));
}

uint64_t parse_retry_after_ms(std::string_view v) {
  while (!v.empty() && v.front() == ' ') v.remove_prefix(1);
  while (!v.empty() && v.back() == ' ') v.remove_suffix(1);
  double seconds = 0;
  auto r = std::from_chars(v.data(), v.data() + v.size(), seconds);
  if (r.ec != std::errc{} || r.ptr != v.data() + v.size() || !std::isfinite(seconds) || seconds < 0) return 0;
  constexpr double ms_max = 1e12;  // far beyond any bound a caller applies; keeps the cast defined
  return static_cast<uint64_t>(std::min(seconds * 1000, ms_max));
}

std::string scrub_key(std::string text, const std::string& key) {
  if (!key.empty())
    for (size_t at; (at = text.find(key)) != std::string::npos;) text.replace(at, key.size(), "***");
  return text;
}

std::string error_message(std::string_view body, const std::string& key) {
  std::string msg;
  json::document doc;
  json::object_reader r, e;
  json::dom::element el;
  if (json::parse(body, {}, "error", &doc).is_ok() && json::object_reader::open(doc.root(), "reply", &r).is_ok() &&
      r.element("error", &el).is_ok()) {
    if (json::object_reader::open(el, "error", &e).is_ok()) e.string("message", &msg).ignore();
    else if (el.is_string()) msg = std::string{el.get_string().value_unsafe()};
  }
  if (msg.empty()) msg = std::string{body};
  msg = scrub_key(std::move(msg), key);
  if (msg.size() > error_text_bytes_max) {
    size_t cut = error_text_bytes_max;
    while (cut > 0 && (static_cast<unsigned char>(msg[cut]) & 0xC0) == 0x80) --cut;
    msg = msg.substr(0, cut) + "...";
  }
  return msg.empty() ? "(no body)" : msg;
}

}  // namespace skein::openai_http
