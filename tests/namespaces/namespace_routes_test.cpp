// Every route of the HTTP API across two namespaces and every kind of token:
// nothing is read, written, listed, searched, streamed or exported across a
// namespace, and another namespace's id answers exactly as a missing one.
#include <catch2/catch.hpp>
#include <atomic>
#include <filesystem>
#include <thread>

#include "tests/support/namespace_server.hpp"

using namespace skein;
using namespace skein::test;
namespace fs = std::filesystem;

namespace {

const std::string root = "root-token-0123456789", acme_admin = "acme-admin-0123456789",
                  acme_alpha = "acme-alpha-0123456789", bravo_admin = "bravo-admin-012345678",
                  bravo_alpha = "bravo-alpha-012345678", default_alpha = "default-alpha-0123456";
const std::string tokens = root + " admin\n" + acme_admin + " @acme admin\n" + acme_alpha + " @acme alpha\n" +
                           bravo_admin + " @bravo admin\n" + bravo_alpha + " @bravo alpha\n" + default_alpha +
                           " alpha\n";
constexpr const char* rules = R"({"default":{"reply":"noted"}})";
const std::string secret = "acme-secret-plan";

// skein serve's setup (tests/support/namespace_server.hpp) with these tokens.
struct tenant_server : namespace_server {
  tenant_server() : namespace_server(tokens) {}
};

std::string replaced(std::string text, const std::string& from, const std::string& to) {
  for (size_t at = 0; (at = text.find(from, at)) != std::string::npos; at += to.size()) text.replace(at, from.size(), to);
  return text;
}

std::string id_of(const http::response& r, const char* name = "id") {
  std::string v = field(r.body, name);
  INFO(r.body);
  REQUIRE_FALSE(v.empty());
  return v;
}

}  // namespace

TEST_CASE("namespaces over HTTP: every route with another namespace's ids answers as with missing ones, for every token") {
  tenant_server s;
  REQUIRE(s.call("POST", "/v1/namespaces", R"({"name":"acme"})", root).status == 201);
  REQUIRE(s.call("POST", "/v1/namespaces", R"({"name":"bravo"})", root).status == 201);
  const std::string agent = std::string(R"({"id":"alpha","system_prompt":"t","engine_config":)") + rules + "}";
  REQUIRE(s.call("POST", "/v1/agents", agent, acme_admin).status == 201);
  REQUIRE(s.call("POST", "/v1/agents", agent, bravo_admin).status == 201);

  // acme's world: a thread with a secret, a task thread, a schedule bound to it, a work item.
  std::string thread = id_of(s.call("POST", "/v1/threads", R"({"agent_id":"alpha","task_id":"task-a"})", acme_alpha));
  auto ran = s.call("POST", "/v1/threads/" + thread + "/entries", R"({"text":")" + secret + R"(","wait":true})", acme_alpha);
  REQUIRE(ran.status == 200);
  std::string schedule =
      id_of(s.call("POST", "/v1/schedules",
                   R"({"id":"sched-a","agent_id":"alpha","kind":"interval","interval_ms":3600000,"input":{"text":"tick"},"thread_id":")" +
                       thread + R"("})",
                   acme_alpha));
  auto item = s.call("POST", "/v1/agents/alpha/items", R"({"text":"acme item to fix the deploy"})", acme_alpha);
  REQUIRE(item.status == 201);
  const std::string key = R"("id":")";
  size_t at = item.body.find(key);
  REQUIRE(at != std::string::npos);
  std::string item_thread = item.body.substr(at + key.size(), item.body.find('"', at + key.size()) - at - key.size());
  // bravo has its own thread, so that its listings are not empty by accident.
  std::string own = id_of(s.call("POST", "/v1/threads", R"({"agent_id":"alpha"})", bravo_alpha));

  const std::string missing_thread = "th_20260101_zzzzzzzzzzzz";
  struct route {
    std::string method, path, body;
  };
  // {id}: a thread id; {item}: a work item's thread; {task}, {schedule}: their ids.
  const std::vector<route> by_id = {
      {"GET", "/v1/threads/{id}", ""},
      {"PATCH", "/v1/threads/{id}", R"({"title":"taken"})"},
      {"POST", "/v1/threads/{id}/entries", R"({"text":"hijack"})"},
      {"POST", "/v1/threads/{id}/entries", R"({"text":"hijack","wait":true})"},
      {"GET", "/v1/threads/{id}/entries", ""},
      {"GET", "/v1/threads/{id}/stream", ""},
      {"POST", "/v1/threads/{id}/members", R"({"agent":"alpha"})"},
      {"DELETE", "/v1/threads/{id}/members/alpha", ""},
      {"POST", "/v1/threads/{id}/cancel", ""},
      {"POST", "/v1/threads/{id}/fork", R"({"at_seq":1})"},
      {"GET", "/v1/threads/{id}/diagnose", ""},
      {"POST", "/v1/threads/{id}/reconcile", ""},
      {"POST", "/v1/threads/{id}/compact", "{}"},
      {"GET", "/v1/threads/{id}/export", ""},
      {"GET", "/v1/threads/{item}/item", ""},
      {"POST", "/v1/threads/{item}/touch", ""},
      {"POST", "/v1/threads/{item}/relate", R"({"issue_id":"X-1"})"},
      {"DELETE", "/v1/threads/{id}", ""},
      {"POST", "/v1/threads", R"({"agent_id":"alpha","parent_thread_id":"{id}"})"},
      {"POST", "/v1/agents/alpha/items/resolve", R"({"thread_id":"{item}"})"},
      {"POST", "/v1/schedules", R"({"agent_id":"alpha","kind":"interval","interval_ms":60000,"input":{"text":"x"},"thread_id":"{id}"})"},
      {"GET", "/v1/tasks/{task}", ""},
      {"GET", "/v1/schedules/{schedule}", ""},
      {"POST", "/v1/schedules/{schedule}/pause", ""},
      {"POST", "/v1/schedules/{schedule}/resume", ""},
      {"GET", "/v1/schedules/{schedule}/history", ""},
      {"GET", "/v1/schedules/{schedule}/preview", ""},
      {"DELETE", "/v1/schedules/{schedule}", ""},
  };
  struct caller {
    const char* name;
    std::string token;
    http::header_list headers;
  };
  const std::vector<caller> callers = {
      {"bravo's admin", bravo_admin, {}},
      {"bravo's agent token", bravo_alpha, {}},
      {"the server's admin in bravo", root, {{"Skein-Namespace", "bravo"}}},
      {"the server's admin in default", root, {}},
      {"a default namespace token", default_alpha, {}},
  };
  auto fill = [](std::string text, const std::string& id, const std::string& item_id, const std::string& task,
                 const std::string& sched) {
    text = replaced(text, "{id}", id);
    text = replaced(text, "{item}", item_id);
    text = replaced(text, "{task}", task);
    return replaced(text, "{schedule}", sched);
  };
  for (const auto& who : callers) {
    for (const auto& r : by_id) {
      auto foreign = s.call(r.method, fill(r.path, thread, item_thread, "task-a", schedule),
                            fill(r.body, thread, item_thread, "task-a", schedule), who.token, who.headers);
      auto missing = s.call(r.method, fill(r.path, missing_thread, missing_thread, "task-z", "sched-z"),
                            fill(r.body, missing_thread, missing_thread, "task-z", "sched-z"), who.token, who.headers);
      INFO(who.name << ": " << r.method << " " << r.path << " " << r.body << "\n  foreign: " << foreign.status << " "
                    << foreign.body << "\n  missing: " << missing.status << " " << missing.body);
      CHECK(foreign.status == missing.status);
      std::string a = replaced(replaced(replaced(replaced(foreign.body, thread, "<id>"), item_thread, "<id>"), "task-a", "<task>"),
                               schedule, "<sched>");
      std::string b = replaced(replaced(replaced(missing.body, missing_thread, "<id>"), "task-z", "<task>"), "sched-z", "<sched>");
      if (foreign.status >= 400) CHECK(a == b);
      CHECK(foreign.body.find(secret) == std::string::npos);
      CHECK(foreign.body.find("deploy") == std::string::npos);
    }
    // Listings, searches, usage, the graph: none shows acme's.
    for (const std::string& path :
         {std::string("/v1/threads"), std::string("/v1/threads?agent=alpha"), std::string("/v1/agents"),
          std::string("/v1/schedules"), std::string("/v1/usage?agent=alpha"), std::string("/v1/agents/alpha/memory?q=") + secret,
          std::string("/v1/agents/alpha/items"), std::string("/v1/agents/alpha/suggestions?all=true"),
          std::string("/v1/graph/stats"), std::string("/v1/graph/produced_by?agent=alpha"),
          std::string("/v1/graph/connected?node=thread:") + thread, std::string("/metrics")}) {
      auto r = s.call("GET", path, "", who.token, who.headers);
      INFO(who.name << ": GET " << path << " -> " << r.status << " " << r.body);
      CHECK(r.status < 500);
      CHECK(r.body.find(thread) == std::string::npos);
      CHECK(r.body.find(secret) == std::string::npos);
      CHECK(r.body.find("sched-a") == std::string::npos);
    }
  }

  // acme's thread, schedule and item are all still there, untouched.
  auto kept = s.call("GET", "/v1/threads/" + thread + "/entries", "", acme_alpha);
  REQUIRE(kept.status == 200);
  CHECK(kept.body.find(secret) != std::string::npos);
  CHECK(kept.body.find("hijack") == std::string::npos);
  CHECK(s.call("GET", "/v1/schedules/" + schedule, "", acme_alpha).status == 200);
  CHECK(s.call("GET", "/v1/threads/" + item_thread + "/item", "", acme_alpha).status == 200);
  CHECK(s.call("GET", "/v1/threads/" + own, "", acme_admin).status == 404);

  // An import into bravo of acme's thread id makes bravo's own thread of that
  // id: it neither conflicts with nor touches acme's.
  auto exported = s.call("GET", "/v1/threads/" + thread + "/export", "", acme_alpha);
  REQUIRE(exported.status == 200);
  std::string copy = replaced(exported.body, secret, "bravo-copy");
  auto imported = s.call("POST", "/v1/import?format=skein&agent=alpha", copy, bravo_alpha);
  INFO(imported.body);
  CHECK(imported.status == 201);
  CHECK(s.call("GET", "/v1/threads/" + thread + "/entries", "", acme_alpha).body.find(secret) != std::string::npos);
  CHECK(s.call("GET", "/v1/threads/" + thread + "/entries", "", bravo_alpha).body.find(secret) == std::string::npos);
}

TEST_CASE("namespaces over HTTP: the header, /v1/namespaces, quotas and removal") {
  tenant_server s;
  REQUIRE(s.call("POST", "/v1/namespaces", R"({"name":"acme"})", root).status == 201);
  REQUIRE(s.call("POST", "/v1/namespaces", R"({"name":"bravo","quota":{"threads_max":2}})", root).status == 201);

  // A namespace's token cannot step into another, whatever exists there.
  for (const std::string& other : {std::string("bravo"), std::string("nothere")}) {
    auto r = s.call("GET", "/v1/threads", "", acme_admin, {{"Skein-Namespace", other}});
    CHECK(r.status == 403);
    CHECK(r.body.find("acts in acme") != std::string::npos);
  }
  CHECK(s.call("GET", "/v1/threads", "", acme_admin, {{"Skein-Namespace", "acme"}}).status == 200);
  CHECK(s.call("GET", "/v1/threads", "", root, {{"Skein-Namespace", "nothere"}}).status == 404);
  auto bad_header = s.call("GET", "/v1/threads", "", root, {{"Skein-Namespace", "Not/Valid"}});
  CHECK(bad_header.status == 400);
  CHECK(error_code(bad_header.body) == "invalid_input");

  // Listing: the server's admin sees all, a namespace's token its own only.
  auto all = s.call("GET", "/v1/namespaces", "", root);
  CHECK(all.body.find("\"acme\"") != std::string::npos);
  CHECK(all.body.find("\"bravo\"") != std::string::npos);
  CHECK(all.body.find("\"default\"") != std::string::npos);
  auto mine = s.call("GET", "/v1/namespaces", "", acme_alpha);
  CHECK(mine.body.find("\"acme\"") != std::string::npos);
  CHECK(mine.body.find("bravo") == std::string::npos);
  auto own = s.call("GET", "/v1/namespaces/acme", "", acme_alpha);
  CHECK(own.status == 200);
  CHECK(own.body.find("\"usage\"") != std::string::npos);
  auto other = s.call("GET", "/v1/namespaces/bravo", "", acme_admin);
  auto none = s.call("GET", "/v1/namespaces/nothere", "", acme_admin);
  CHECK(other.status == 404);
  CHECK(replaced(other.body, "bravo", "<n>") == replaced(none.body, "nothere", "<n>"));

  // Only the server's admin manages them; bodies are checked by field.
  CHECK(s.call("POST", "/v1/namespaces", R"({"name":"mine"})", acme_admin).status == 403);
  CHECK(s.call("PATCH", "/v1/namespaces/acme", R"({"quota":{"threads_max":1}})", acme_admin).status == 403);
  CHECK(s.call("DELETE", "/v1/namespaces/bravo", "", acme_admin).status == 403);
  CHECK(s.call("POST", "/v1/namespaces", R"({"name":"acme"})", root).status == 409);
  auto bad_name = s.call("POST", "/v1/namespaces", R"({"name":"Bad Name"})", root);
  CHECK(bad_name.status == 400);
  CHECK(bad_name.body.find("\"field\":\"body.name\"") != std::string::npos);
  auto long_name = s.call("POST", "/v1/namespaces", R"({"name":")" + std::string(200, 'a') + R"("})", root);
  CHECK(long_name.status == 400);
  CHECK(long_name.body.find("namespace_name_bytes_max") != std::string::npos);
  auto unknown = s.call("POST", "/v1/namespaces", R"({"name":"x","quota":{"thread_max":1}})", root);
  CHECK(unknown.status == 400);
  CHECK(unknown.body.find("body.quota.thread_max") != std::string::npos);
  auto extra = s.call("POST", "/v1/namespaces", R"({"name":"x","owner":"me"})", root);
  CHECK(extra.status == 400);
  CHECK(extra.body.find("body.owner") != std::string::npos);
  auto negative = s.call("POST", "/v1/namespaces", R"({"name":"x","quota":{"threads_max":-1}})", root);
  CHECK(negative.status == 400);
  CHECK(s.call("POST", "/v1/namespaces", std::string(100, '[') + std::string(100, ']'), root).status == 400);
  CHECK(s.call("POST", "/v1/namespaces", "{\"name\":", root).status == 400);
  CHECK(s.call("PATCH", "/v1/namespaces/acme", "{}", root).status == 400);
  CHECK(s.call("DELETE", "/v1/namespaces/default", "", root).status == 400);
  CHECK(s.call("PUT", "/v1/namespaces/acme", "", root).status == 405);
  auto listed = s.call("GET", "/v1/namespaces", "", root);
  CHECK(listed.body.find("\"x\"") == std::string::npos);  // no refused create left anything

  // bravo's quota: two threads, then 429 naming the limit; raising it lets the next in.
  const std::string agent = std::string(R"({"id":"alpha","system_prompt":"t","engine_config":)") + rules + "}";
  REQUIRE(s.call("POST", "/v1/agents", agent, bravo_admin).status == 201);
  REQUIRE(s.call("POST", "/v1/threads", R"({"agent_id":"alpha"})", bravo_alpha).status == 201);
  REQUIRE(s.call("POST", "/v1/threads", R"({"agent_id":"alpha"})", bravo_alpha).status == 201);
  auto over = s.call("POST", "/v1/threads", R"({"agent_id":"alpha"})", bravo_alpha);
  CHECK(over.status == 429);
  CHECK(error_code(over.body) == "quota_exceeded");
  CHECK(over.body.find("\"limit\":\"threads_max\"") != std::string::npos);
  auto usage = s.call("GET", "/v1/namespaces/bravo", "", bravo_admin);
  CHECK(usage.body.find("\"threads\":2") != std::string::npos);
  // acme has no quota: its threads are not counted against bravo's.
  REQUIRE(s.call("POST", "/v1/agents", agent, acme_admin).status == 201);
  CHECK(s.call("POST", "/v1/threads", R"({"agent_id":"alpha"})", acme_alpha).status == 201);
  auto raised = s.call("PATCH", "/v1/namespaces/bravo", R"({"quota":{"threads_max":3}})", root);
  CHECK(raised.status == 200);
  CHECK(raised.body.find("\"threads_max\":3") != std::string::npos);
  std::string streamed = id_of(s.call("POST", "/v1/threads", R"({"agent_id":"alpha"})", bravo_alpha));

  // Removal: a stream open in bravo ends with a last frame, bravo's tokens find
  // nothing any more, its database is gone, acme's stays.
  fs::path db = s.set->database_dir("bravo");
  REQUIRE(fs::exists(db));
  std::vector<std::string> frames;  // written by the streaming thread, read after join
  std::atomic<bool> streaming{false};
  std::thread reader([&] {  // no Catch2 macro here: not the test's thread
    http::client c{{"127.0.0.1", s.srv->port()}, bravo_alpha, std::chrono::seconds(10)};
    int code = 0;
    c.stream("/v1/threads/" + streamed + "/stream", {},
             [&](const http::sse_event& e) {
               frames.push_back(e.event);
               streaming = true;
               return true;
             },
             &code, std::chrono::seconds(20))
        .ignore();
  });
  // The stream is live once its subscription exists: a run's events arrive on it.
  REQUIRE(s.call("POST", "/v1/threads/" + streamed + "/entries", R"({"text":"hello","wait":true})", bravo_alpha).status ==
          200);
  for (int i = 0; i < 1000 && !streaming; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  REQUIRE(streaming.load());
  CHECK(s.call("DELETE", "/v1/namespaces/bravo", "", root).status == 204);
  reader.join();
  REQUIRE_FALSE(frames.empty());
  CHECK(frames.back() == "closed");
  CHECK_FALSE(fs::exists(db));
  auto after = s.call("GET", "/v1/threads", "", bravo_alpha);
  CHECK(after.status == 404);
  CHECK(after.body.find("namespace") != std::string::npos);
  CHECK(s.call("DELETE", "/v1/namespaces/bravo", "", root).status == 404);
  CHECK(s.call("GET", "/v1/threads", "", acme_alpha).status == 200);
}

TEST_CASE("namespaces over HTTP: token lines naming a namespace are checked") {
  server::token_store store;
  REQUIRE(server::token_store::parse("tok-0123456789abcdef @acme admin\ntok-1123456789abcdef @acme alpha beta\n", &store)
              .is_ok());
  auto admin_scope = store.authenticate("Bearer tok-0123456789abcdef");
  REQUIRE(admin_scope);
  CHECK(admin_scope->ns == "acme");
  CHECK(admin_scope->admin);
  CHECK_FALSE(admin_scope->server_admin);
  auto agents = store.authenticate("Bearer tok-1123456789abcdef");
  REQUIRE(agents);
  CHECK(agents->ns == "acme");
  CHECK_FALSE(agents->admin);
  CHECK(agents->agents.count("beta") == 1);
  for (const char* bad : {"tok-0123456789abcdef @acme\n", "tok-0123456789abcdef @Bad admin\n",
                          "tok-0123456789abcdef alpha @acme\n", "tok-0123456789abcdef @acme @bravo admin\n",
                          "tok-0123456789abcdef @ admin\n"}) {
    server::token_store refused;
    auto s = server::token_store::parse(bad, &refused);
    INFO(bad << " -> " << s.to_string());
    CHECK(s.code() == errc::invalid_input);
    CHECK(s.message().find("line 1") != std::string::npos);
  }
}
