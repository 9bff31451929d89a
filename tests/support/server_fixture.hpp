// An in-process skein server (runtime + API + HTTP on an ephemeral loopback
// port) with real HTTP clients, for integration tests.
#pragma once

#include <catch2/catch.hpp>

#include "runtime/model/json_reader.hpp"
#include "tests/support/served_api.hpp"
#include "tests/support/temp_dir.hpp"

namespace skein::test {

// The tokens of the scoped-access tests: an admin's, and those of agents alpha
// and beta, scoped to their own agent; `tokens` is the token store naming them.
namespace scoped {
inline const std::string admin = "admin-token-0123456789";
inline const std::string alpha = "alpha-token-0123456789";
inline const std::string beta = "beta-token-01234567890";
inline const std::string tokens = admin + " admin\n" + alpha + " alpha\n" + beta + " beta\n";
}  // namespace scoped

struct server_fixture : served_api {
  temp_dir dir;
  std::unique_ptr<runtime> rt;

  explicit server_fixture(runtime_options ro = {}, http::server_limits limits = {}, const std::string& tokens = "") {
    ro.data_dir = dir.str();
    ro.mode = durability::flush;
    REQUIRE(runtime::open(std::move(ro), &rt).is_ok());
    server::token_store store;
    if (!tokens.empty()) REQUIRE(server::token_store::parse(tokens, &store).is_ok());
    serve(*rt, store, limits);
  }
  ~server_fixture() {
    srv->stop();
    rt->close().ignore();
    srv.reset();  // the server and the api go before the runtime they served
    api.reset();
  }

  http::response call(const std::string& method, const std::string& target, const std::string& body = "",
                      const std::string& token = "", const http::header_list& extra = {}) {
    return request(method, target, body, token, extra);
  }

  // call() for a thread other than the test's own: Catch2's macros are not
  // thread-safe (two INFOs at once corrupt its message stack), so this one uses
  // none. A transport failure answers status 0.
  http::response call_off_thread(const std::string& method, const std::string& target, const std::string& body = "",
                                 const std::string& token = "") {
    http::client c{endpoint(), token};
    http::response r;
    if (!c.call(method, target, body, &r)) r.status = 0;
    return r;
  }

  // POST an agent with scripted rules (admin).
  void agent(const std::string& id, const std::string& rules, const std::string& token = "", const std::string& extra = "") {
    auto r = call("POST", "/v1/agents",
                  R"({"id":")" + id + R"(","system_prompt":"test","engine_config":)" + rules + extra + "}", token);
    INFO(r.body);
    REQUIRE(r.status < 300);
  }

  std::string thread(const std::string& agent, const std::string& token = "") {
    auto r = call("POST", "/v1/threads", R"({"agent_id":")" + agent + R"("})", token);
    INFO(r.body);
    REQUIRE(r.status == 201);
    manifest m;
    REQUIRE(decode_manifest(r.body, &m).is_ok());
    return m.id;
  }
};

inline std::string field(const std::string& json, const char* name) {
  json::document doc;
  json::object_reader o;
  std::string v;
  if (json::parse(json, {}, "body", &doc).is_ok() && json::object_reader::open(doc.root(), "body", &o).is_ok())
    o.string(name, &v, false).ignore();
  return v;
}

// A string member of an error body's "error" object; "" when absent.
inline std::string error_member(const std::string& json, const char* name) {
  json::document doc;
  json::dom::element err;
  json::object_reader o, e;
  std::string v;
  if (json::parse(json, {}, "body", &doc).is_ok() && json::object_reader::open(doc.root(), "body", &o).is_ok() &&
      o.element("error", &err).is_ok() && json::object_reader::open(err, "error", &e).is_ok())
    e.string(name, &v, false).ignore();
  return v;
}

inline std::string error_code(const std::string& json) { return error_member(json, "code"); }
inline std::string error_field(const std::string& json) { return error_member(json, "field"); }

// A thread's complete log through GET /v1/threads/{id}/export: the manifest
// line, then one event per line.
inline status export_log(http::client& c, const std::string& thread, std::vector<event>* out) {
  http::response r;
  SKEIN_TRY(c.call("GET", "/v1/threads/" + thread + "/export", "", &r));
  if (r.status != 200) return status::io_error("export " + thread + ": HTTP " + std::to_string(r.status) + " " + r.body);
  out->clear();
  size_t start = r.body.find('\n');
  if (start == std::string::npos) return status::corruption("export " + thread + ": no manifest line");
  for (++start; start < r.body.size();) {
    size_t nl = r.body.find('\n', start);
    if (nl == std::string::npos) nl = r.body.size();
    event e;
    SKEIN_TRY(decode_event(r.body.substr(start, nl - start), &e));
    out->push_back(std::move(e));
    start = nl + 1;
  }
  return status::ok();
}

// Fields of a POST .../entries answer: {"run":{...,"run_id":...,"last_seq":...}}.
inline std::string entry_run_id(const std::string& body) {
  auto p = body.find(R"("run_id":")");
  return p == std::string::npos ? "" : body.substr(p + 10, body.find('"', p + 10) - p - 10);
}

inline uint64_t entry_last_seq(const std::string& body) {
  auto p = body.find(R"("last_seq":)");
  return p == std::string::npos ? 0 : std::stoull(body.substr(p + 11));
}

inline std::string error_limit(const std::string& json) {
  auto pos = json.find(R"("limit":")");
  if (pos == std::string::npos) return "";
  pos += 9;
  return json.substr(pos, json.find('"', pos) - pos);
}

// Posts an input to `thread`, once waiting for its run and once not; each post is
// refused with `http_status`, error `code` and `limit`, and the thread's log
// gains nothing. Returns the thread's manifest as it stood before the posts.
inline manifest check_entries_refused(server_fixture& f, const std::string& thread, int http_status,
                                      const std::string& code, const std::string& limit) {
  manifest before;
  REQUIRE(f.rt->get_thread(thread, &before).is_ok());
  for (const std::string body : {R"({"text":"hi","wait":true})", R"({"text":"hi"})"}) {
    auto r = f.call("POST", "/v1/threads/" + thread + "/entries", body);
    INFO(r.body);
    CHECK(r.status == http_status);
    CHECK(error_code(r.body) == code);
    CHECK(error_limit(r.body) == limit);
  }
  manifest after;
  REQUIRE(f.rt->get_thread(thread, &after).is_ok());
  CHECK(after.last_seq == before.last_seq);
  return before;
}

}  // namespace skein::test
