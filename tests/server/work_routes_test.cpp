// The work-item routes over HTTP (tools/API.md, "Work items"): happy paths,
// errors with their status, code and field, the auth matrix and the bounds.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>

#include <catch2/catch.hpp>

#include "tests/support/server_fixture.hpp"

using namespace skein;
using namespace skein::test;

namespace {

const std::string admin = "admin-token-0123456789", alpha = "alpha-token-0123456789", beta = "beta-token-01234567890";
const std::string tokens = admin + " admin\n" + alpha + " alpha\n" + beta + " beta\n";
constexpr const char* ok_rules = R"({"default":{"reply":"ok"}})";

// The item id of a create answer: {"item":{"id":"..."...
std::string item_id(const std::string& body) {
  auto p = body.find(R"("item":{"id":")");
  return p == std::string::npos ? "" : body.substr(p + 14, body.find('"', p + 14) - p - 14);
}

}  // namespace

TEST_CASE("work routes: create, dedup, get, touch, relate, list, resolve and sweep") {
  server_fixture f;
  f.agent("a", ok_rules);
  auto r = f.call("POST", "/v1/agents/a/items", R"({"text":"fix the broken deploy","relates_to":["GH-7"]})");
  INFO(r.body);
  REQUIRE(r.status == 201);
  std::string id = item_id(r.body);
  REQUIRE(!id.empty());
  CHECK(r.body.find(R"("deduplicated":false)") != std::string::npos);
  CHECK(r.body.find(R"("class":"operational")") != std::string::npos);
  r = f.call("POST", "/v1/agents/a/items", R"({"text":"Fix the broken deploy!"})");
  CHECK(r.status == 200);
  CHECK(item_id(r.body) == id);
  CHECK(r.body.find(R"("deduplicated":true)") != std::string::npos);
  r = f.call("GET", "/v1/threads/" + id + "/item");
  CHECK(r.status == 200);
  CHECK(r.body.find(R"("stage":"emerging")") != std::string::npos);
  CHECK(f.call("POST", "/v1/threads/" + id + "/touch").status == 200);
  CHECK(f.call("POST", "/v1/threads/" + id + "/relate", R"({"issue_id":"GH-8"})").status == 200);
  r = f.call("GET", "/v1/graph/connected?node=thread:" + id);
  CHECK(r.status == 200);
  CHECK(r.body.find("issue:GH-8") != std::string::npos);
  r = f.call("GET", "/v1/agents/a/items?limit=10");
  CHECK(r.status == 200);
  CHECK(r.body.find(id) != std::string::npos);
  r = f.call("POST", "/v1/agents/a/items/resolve", R"({"text":"broken deploy","note":"rolled back"})");
  INFO(r.body);
  CHECK(r.status == 200);
  CHECK(r.body.find(R"("status":"resolved")") != std::string::npos);
  CHECK(f.call("GET", "/v1/agents/a/items").body.find(id) == std::string::npos);
  CHECK(f.call("GET", "/v1/agents/a/items?stage=resolved").body.find(id) != std::string::npos);
  r = f.call("POST", "/v1/agents/a/items/sweep", R"({"auto_archive":true})");
  CHECK(r.status == 200);
  CHECK(r.body.find(R"("examined":)") != std::string::npos);
  CHECK(f.call("GET", "/v1/graph/stats").status == 200);
  CHECK(f.call("GET", "/v1/graph/produced_by?agent=a").body.find("created_thread") != std::string::npos);
  CHECK(f.call("GET", "/v1/graph/provenance?node=thread:" + id + "&depth=2").status == 200);
}

TEST_CASE("work routes: sessions, suggestions from recurring topics, promote and dismiss") {
  server_fixture f{{}, {}, tokens};
  f.agent("alpha", ok_rules, admin);
  f.agent("beta", ok_rules, admin);
  auto r = f.call("POST", "/v1/agents/alpha/sessions", R"({"session_id":"s1"})", alpha);
  INFO(r.body);
  REQUIRE(r.status == 201);
  CHECK(r.body.find(R"("session_id":"s1")") != std::string::npos);
  r = f.call("POST", "/v1/agents/alpha/sessions/s1/close", R"({"summary":"did things","open_items":["write docs"]})",
             alpha);
  CHECK(r.status == 200);
  CHECK(r.body.find("write docs") != std::string::npos);
  // A topic in three sessions becomes a suggestion, twice over for two topics.
  for (const char* sid : {"s2", "s3", "s4"}) {
    REQUIRE(f.call("POST", std::string{"/v1/agents/alpha/sessions/"} + sid + "/close",
                   R"({"topics":["migrate the billing database to postgres","tune the flaky integration tests"]})", alpha)
                .status == 200);
  }
  r = f.call("GET", "/v1/agents/alpha/suggestions", "", alpha);
  INFO(r.body);
  REQUIRE(r.status == 200);
  std::vector<std::string> ids;
  for (size_t p = 0; (p = r.body.find(R"({"id":")", p)) != std::string::npos; p += 7)
    ids.push_back(r.body.substr(p + 7, r.body.find('"', p + 7) - p - 7));
  REQUIRE(ids.size() == 2);
  // Another agent's token finds them missing, byte for byte.
  auto other = f.call("POST", "/v1/suggestions/" + ids[0] + "/promote", "", beta);
  auto missing = f.call("POST", "/v1/suggestions/" + ids[0] + "x/promote", "", beta);
  CHECK(other.status == 404);
  std::string b = missing.body;
  b.replace(b.find(ids[0] + "x"), ids[0].size() + 1, ids[0]);
  CHECK(other.body == b);
  r = f.call("POST", "/v1/suggestions/" + ids[0] + "/promote", "", alpha);
  CHECK(r.status == 200);
  CHECK(!item_id(r.body).empty());
  r = f.call("POST", "/v1/suggestions/" + ids[1] + "/dismiss", "", alpha);
  CHECK(r.status == 200);
  CHECK(r.body.find(R"("status":"dismissed")") != std::string::npos);
  CHECK(f.call("GET", "/v1/agents/alpha/suggestions", "", alpha).body == R"({"suggestions":[]})");
  CHECK(f.call("GET", "/v1/agents/alpha/suggestions?all=true", "", alpha).body.find(ids[1]) != std::string::npos);
  r = f.call("POST", "/v1/suggestions/nope/promote", "", admin);
  CHECK(r.status == 404);
  CHECK(error_field(r.body) == "suggestion_id");
  CHECK(f.call("GET", "/v1/agents/alpha/suggestions?all=maybe", "", alpha).status == 400);
}

TEST_CASE("work routes: resolving by a text two items match is a conflict listing both") {
  server_fixture f;
  f.agent("a", ok_rules);
  REQUIRE(f.call("POST", "/v1/agents/a/items", R"({"text":"upgrade the api gateway"})").status == 201);
  REQUIRE(f.call("POST", "/v1/agents/a/items", R"({"text":"document the api rate limits for partners"})").status == 201);
  auto r = f.call("POST", "/v1/agents/a/items/resolve", R"({"text":"api"})");
  INFO(r.body);
  CHECK(r.status == 409);
  CHECK(error_code(r.body) == "conflict");
  CHECK(error_field(r.body) == "text");  // the body's name, not the runtime's
  CHECK(r.body.find("gateway") != std::string::npos);
  CHECK(r.body.find("rate limits") != std::string::npos);
}

TEST_CASE("work routes: errors name the field, and bounds are enforced") {
  server_fixture f;
  f.agent("a", ok_rules);
  struct bad { const char* method; std::string target; std::string body; int status; const char* field; };
  for (const auto& b : {bad{"POST", "/v1/agents/a/items", "{}", 400, "text"},
                        bad{"POST", "/v1/agents/a/items", R"({"text":"   "})", 400, "text"},
                        bad{"POST", "/v1/agents/a/items", R"({"text":")" + std::string(4097, 'x') + R"("})", 400, "text"},
                        bad{"GET", "/v1/agents/a/items?limit=0", "", 400, "limit"},
                        bad{"GET", "/v1/agents/a/items?limit=1001", "", 400, "limit"},
                        bad{"GET", "/v1/agents/a/items?stage=hot", "", 400, "stage"},
                        bad{"POST", "/v1/agents/a/items/resolve", "{}", 400, "thread_id"},
                        bad{"POST", "/v1/agents/a/items/resolve", R"({"text":"nothing like it"})", 404, ""},
                        bad{"GET", "/v1/graph/connected", "", 400, "node"},
                        bad{"GET", "/v1/graph/provenance?node=x&depth=9", "", 400, "depth"},
                        bad{"POST", "/v1/threads/missing/relate", R"({"issue_id":"x"})", 404, ""},
                        bad{"POST", "/v1/agents/nobody/items", R"({"text":"x"})", 404, "agent"}}) {
    auto r = f.call(b.method, b.target, b.body);
    INFO(b.method << " " << b.target.substr(0, 80) << " -> " << r.body.substr(0, 300));
    CHECK(r.status == b.status);
    if (*b.field) CHECK(error_field(r.body) == b.field);
  }
  CHECK(f.call("DELETE", "/v1/agents/a/items").status == 405);
}

TEST_CASE("work routes: another agent's route is refused from the head, its body never read") {
  server_fixture f{{}, {}, tokens};
  f.agent("alpha", ok_rules, admin);
  f.agent("beta", ok_rules, admin);
  // A head announcing a body that never comes: refused from the head, it is
  // answered at once with the missing agent's bytes; read, it would wait.
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  timeval tv{5, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(f.srv->port());
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  std::string head = "POST /v1/agents/beta/items HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " + alpha +
                     "\r\nContent-Length: 1000\r\n\r\n";
  REQUIRE(::send(fd, head.data(), head.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(head.size()));
  std::string in;
  char buf[4096];
  for (ssize_t n; in.find("}}") == std::string::npos && (n = ::recv(fd, buf, sizeof buf, 0)) > 0;)
    in.append(buf, static_cast<size_t>(n));
  ::close(fd);
  INFO(in);
  REQUIRE(in.rfind("HTTP/1.1 404", 0) == 0);
  std::string body = in.substr(in.find("\r\n\r\n") + 4);
  std::string missing = f.call("POST", "/v1/agents/gamma/items", R"({"text":"x"})", alpha).body;
  missing.replace(missing.find("gamma"), 5, "beta");
  CHECK(body == missing);
}

TEST_CASE("work routes: auth — none, wrong, another agent's (the bytes of a missing one), admin") {
  server_fixture f{{}, {}, tokens};
  f.agent("alpha", ok_rules, admin);
  f.agent("beta", ok_rules, admin);
  auto created = f.call("POST", "/v1/agents/beta/items", R"({"text":"beta's own item"})", beta);
  REQUIRE(created.status == 201);
  std::string beta_item = item_id(created.body);
  CHECK(f.call("GET", "/v1/agents/alpha/items").status == 401);
  CHECK(f.call("GET", "/v1/agents/alpha/items", "", "wrong-token-0123456789").status == 401);
  CHECK(f.call("GET", "/v1/agents/alpha/items", "", alpha).status == 200);
  CHECK(f.call("GET", "/v1/agents/beta/items", "", admin).body.find(beta_item) != std::string::npos);
  // Another agent's agent id: exactly a missing agent's answer.
  for (const char* path : {"items", "suggestions"}) {
    auto other = f.call("GET", std::string{"/v1/agents/beta/"} + path, "", alpha);
    auto missing = f.call("GET", std::string{"/v1/agents/beta-not-here/"} + path, "", alpha);
    CHECK(other.status == 404);
    CHECK(error_code(other.body) == "not_found");
    std::string a = other.body, b = missing.body;
    auto p = b.find("beta-not-here");
    REQUIRE(p != std::string::npos);
    b.replace(p, 13, "beta");
    CHECK(a == b);
  }
  // Another agent's item: exactly a missing thread's answer.
  auto other = f.call("GET", "/v1/threads/" + beta_item + "/item", "", alpha);
  auto missing = f.call("GET", "/v1/threads/" + beta_item + "x/item", "", alpha);
  CHECK(other.status == 404);
  std::string b = missing.body;
  b.replace(b.find(beta_item + "x"), beta_item.size() + 1, beta_item);
  CHECK(other.body == b);
  CHECK(f.call("POST", "/v1/threads/" + beta_item + "/touch", "", alpha).status == 404);
  CHECK(f.call("POST", "/v1/agents/alpha/items/resolve", R"({"thread_id":")" + beta_item + R"("})", alpha).status == 404);
  // Graph lenses show a scoped token only its agent's triples.
  CHECK(f.call("GET", "/v1/graph/connected?node=thread:" + beta_item, "", alpha).body.find("beta") == std::string::npos);
  CHECK(f.call("GET", "/v1/graph/connected?node=thread:" + beta_item, "", admin).body.find("beta") != std::string::npos);
  CHECK(f.call("GET", "/v1/graph/produced_by?agent=beta", "", alpha).status == 404);
  CHECK(f.call("GET", "/v1/graph/stats", "", alpha).body.find(R"("triples":0)") != std::string::npos);
}

namespace {

// A value of a JSON answer by JSON pointer ("/thread/id"); "" / -1 / npos when absent.
std::string str_at(const std::string& body, const std::string& pointer) {
  json::document doc;
  std::string_view v;
  if (!json::parse(body, {}, "body", &doc) || doc.root().at_pointer(pointer).get_string().get(v) != simdjson::SUCCESS)
    return "";
  return std::string{v};
}
int64_t int_at(const std::string& body, const std::string& pointer) {
  json::document doc;
  int64_t v = -1;
  if (!json::parse(body, {}, "body", &doc) || doc.root().at_pointer(pointer).get_int64().get(v) != simdjson::SUCCESS)
    return -1;
  return v;
}
bool bool_at(const std::string& body, const std::string& pointer) {
  json::document doc;
  bool v = false;
  return json::parse(body, {}, "body", &doc) && doc.root().at_pointer(pointer).get_bool().get(v) == simdjson::SUCCESS && v;
}
size_t size_at(const std::string& body, const std::string& pointer) {
  json::document doc;
  json::dom::array a;
  if (!json::parse(body, {}, "body", &doc) || doc.root().at_pointer(pointer).get_array().get(a) != simdjson::SUCCESS)
    return std::string::npos;
  return a.size();
}
bool has_at(const std::string& body, const std::string& pointer) {
  json::document doc;
  return json::parse(body, {}, "body", &doc) && doc.root().at_pointer(pointer).error() == simdjson::SUCCESS;
}

// The runtime's clock under the test's control (runtime_options::clock).
struct clocked {
  std::shared_ptr<std::atomic<int64_t>> now = std::make_shared<std::atomic<int64_t>>(1700000000000);
  runtime_options options() {
    runtime_options o;
    o.clock = [n = now] { return n->load(); };
    o.work_sweep_interval_ms = 0;
    return o;
  }
};

constexpr int64_t day = 24LL * 3600 * 1000;

}  // namespace

TEST_CASE("work routes: the seed's parameters and answers (create, resolve, list, cleanup)") {
  clocked clock;
  server_fixture f{clock.options()};
  f.agent("a", ok_rules);
  auto r = f.call("POST", "/v1/agents/a/items",
                  R"({"text":"deploy pipeline is broken","linear_issue":"PROJ-123","project":"billing"})");
  INFO(r.body);
  REQUIRE(r.status == 201);
  std::string id = str_at(r.body, "/thread/id");
  REQUIRE(!id.empty());
  CHECK(str_at(r.body, "/item/id") == id);  // skein's name beside the seed's
  CHECK_FALSE(bool_at(r.body, "/deduplicated"));
  CHECK(str_at(r.body, "/thread/linear_issue") == "PROJ-123");
  CHECK(str_at(r.body, "/thread/project") == "billing");
  CHECK(str_at(r.body, "/thread/status") == "open");
  CHECK(str_at(r.body, "/thread/created_at") == "2023-11-14T22:13:20.000Z");
  r = f.call("POST", "/v1/agents/a/items", R"({"text":"Deploy pipeline is broken!","project":"billing"})");
  CHECK(r.status == 200);
  CHECK(bool_at(r.body, "/deduplicated"));
  CHECK(str_at(r.body, "/dedup_details/matched_thread_id") == id);
  CHECK(str_at(r.body, "/dedup_details/method") == "embedding");  // the hashing embedder's
  CHECK(str_at(r.body, "/dedup/matched_thread_id") == id);
  // The item's linear_issue is in the graph, as the seed's triple writer puts it.
  r = f.call("GET", "/v1/graph/connected_to?node=issue:PROJ-123&project=billing");
  CHECK(str_at(r.body, "/triples/0/subject") == "thread:" + id);
  // Stored with the item: read back by id.
  CHECK(str_at(f.call("GET", "/v1/threads/" + id + "/item").body, "/linear_issue") == "PROJ-123");

  // resolve_thread {text_match, resolution_note}: {success, resolved_thread}.
  r = f.call("POST", "/v1/agents/a/items/resolve",
             R"({"text_match":"deploy pipeline","resolution_note":"rolled back","project":"billing"})");
  INFO(r.body);
  REQUIRE(r.status == 200);
  CHECK(bool_at(r.body, "/success"));
  CHECK(str_at(r.body, "/resolved_thread/id") == id);
  CHECK(str_at(r.body, "/resolved_thread/status") == "resolved");
  CHECK(str_at(r.body, "/resolved_thread/resolution_note") == "rolled back");
  CHECK(str_at(r.body, "/resolution") == "rolled back");  // skein's fields stay
  CHECK(has_at(r.body, "/resolved_thread/resolved_at"));

  // list_threads {status, include_resolved, project}: {threads, total_open, total_resolved}.
  REQUIRE(f.call("POST", "/v1/agents/a/items", R"({"text":"write the export docs","project":"billing"})").status == 201);
  REQUIRE(f.call("POST", "/v1/agents/a/items", R"({"text":"tune the search ranking"})").status == 201);
  r = f.call("GET", "/v1/agents/a/items?project=billing");
  CHECK(size_at(r.body, "/threads") == 1);
  CHECK(str_at(r.body, "/threads/0/text") == "write the export docs");
  CHECK(size_at(r.body, "/items") == 1);
  CHECK(int_at(r.body, "/total_open") == 1);
  CHECK(int_at(r.body, "/total_resolved") == 1);
  r = f.call("GET", "/v1/agents/a/items?project=billing&status=resolved");
  CHECK(size_at(r.body, "/threads") == 1);
  CHECK(str_at(r.body, "/threads/0/id") == id);
  r = f.call("GET", "/v1/agents/a/items?project=billing&include_resolved=true");
  CHECK(size_at(r.body, "/threads") == 2);
  // No project: the seed's default project, not billing's.
  r = f.call("GET", "/v1/agents/a/items");
  CHECK(size_at(r.body, "/threads") == 1);
  CHECK(str_at(r.body, "/threads/0/text") == "tune the search ranking");
  CHECK(int_at(r.body, "/total_resolved") == 0);

  // cleanup_threads {project, auto_archive}: {summary, groups, archived_count, archived_ids}.
  auto old = f.call("POST", "/v1/agents/a/items", R"({"text":"fix the flaky deploy","project":"billing"})");
  std::string old_id = str_at(old.body, "/thread/id");
  clock.now->fetch_add(60 * day);  // the operational item: dormant from day ~4.4, over 30 days of it
  r = f.call("POST", "/v1/agents/a/items/sweep", R"({"project":"billing","auto_archive":true})");
  INFO(r.body);
  REQUIRE(r.status == 200);
  CHECK(int_at(r.body, "/archived_count") == 1);
  CHECK(str_at(r.body, "/archived_ids/0") == old_id);
  CHECK(int_at(r.body, "/summary/total_open") == 1);
  CHECK(int_at(r.body, "/summary/dormant") + int_at(r.body, "/summary/cooling") == 1);
  for (const char* g : {"/groups/emerging", "/groups/active", "/groups/cooling", "/groups/dormant"}) CHECK(size_at(r.body, g) != std::string::npos);
  std::string group = int_at(r.body, "/summary/dormant") == 1 ? "/groups/dormant/0" : "/groups/cooling/0";
  CHECK(str_at(r.body, group + "/text") == "write the export docs");
  CHECK(int_at(r.body, group + "/days_since_touch") == 60);
  CHECK(str_at(r.body, group + "/thread_class") == "backlog");
  // The default project's item was not swept.
  CHECK(str_at(f.call("GET", "/v1/agents/a/items").body, "/threads/0/text") == "tune the search ranking");
  CHECK(int_at(r.body, "/examined") == 2);
}

TEST_CASE("work routes: the seed's names and skein's are one parameter, and both at once is refused") {
  server_fixture f;
  f.agent("a", ok_rules);
  REQUIRE(f.call("POST", "/v1/agents/a/items", R"({"text":"upgrade the api gateway"})").status == 201);
  auto r = f.call("POST", "/v1/agents/a/items/resolve", R"({"text":"gateway","text_match":"gateway"})");
  CHECK(r.status == 400);
  CHECK(error_field(r.body) == "text_match");
  r = f.call("POST", "/v1/agents/a/items/resolve", R"({"text":"gateway","note":"a","resolution_note":"b"})");
  CHECK(r.status == 400);
  CHECK(error_field(r.body) == "resolution_note");
  r = f.call("POST", "/v1/agents/a/items/resolve", R"({"text_match":"no such"})");
  CHECK(r.status == 404);
  CHECK(error_field(r.body) == "text_match");  // the name the client sent
  r = f.call("GET", "/v1/agents/a/items?stage=active&status=open");
  CHECK(r.status == 400);
  CHECK(error_field(r.body) == "stage");
  CHECK(error_field(f.call("GET", "/v1/agents/a/items?status=closed").body) == "status");
  // An empty project in the query is an absent one: the default project's items.
  r = f.call("GET", "/v1/agents/a/items?project=");
  CHECK(r.status == 200);
  CHECK(str_at(r.body, "/threads/0/text") == "upgrade the api gateway");
  CHECK(error_field(f.call("POST", "/v1/agents/a/items", R"({"text":"x","project":""})").body) == "project");
  CHECK(f.call("GET", "/v1/agents/a/items?project=" + std::string(129, 'p')).status == 400);
  // session_close: open_threads (texts or objects) as open_items.
  r = f.call("POST", "/v1/agents/a/sessions/s1/close",
             R"({"open_threads":["write the docs",{"text":"ship the beta","status":"open"},{"note":"old one","status":"resolved"}]})");
  INFO(r.body);
  REQUIRE(r.status == 200);
  CHECK(size_at(r.body, "/items") == 2);
  CHECK(str_at(r.body, "/items/1/thread/text") == "ship the beta");
  r = f.call("POST", "/v1/agents/a/sessions/s2/close", R"({"open_threads":["a"],"open_items":["b"]})");
  CHECK(r.status == 400);
  CHECK(error_field(r.body) == "open_threads");
  r = f.call("POST", "/v1/agents/a/sessions/s2/close", R"({"open_threads":[{"status":"open"}]})");
  CHECK(r.status == 400);
  CHECK(error_field(r.body) == "open_threads[0].text");
  CHECK_THAT(r.body, Catch::Contains("open_threads[0].text: missing"));  // the message names the field too
  r = f.call("POST", "/v1/agents/a/sessions/s2/close", R"({"open_threads":["ok",[["nested"]]]})");
  CHECK(r.status == 400);
  CHECK(error_field(r.body) == "open_threads[1]");
  // graph lens connected_to is connected; produced_by takes the seed's node.
  auto a = f.call("GET", "/v1/graph/connected?node=session:s1");
  auto b = f.call("GET", "/v1/graph/connected_to?node=session:s1");
  CHECK(a.status == 200);
  CHECK(size_at(a.body, "/triples") == 2);
  CHECK(a.body == b.body);
  CHECK(f.call("GET", "/v1/graph/produced_by?node=a").body == f.call("GET", "/v1/graph/produced_by?agent=a").body);
  CHECK(f.call("GET", "/v1/graph/produced_by?node=agent:a").body == f.call("GET", "/v1/graph/produced_by?agent=a").body);
  CHECK(size_at(f.call("GET", "/v1/graph/connected_to?node=session:s1&predicate=resolves_thread").body, "/triples") == 0);
}

TEST_CASE("work routes: projects over HTTP — sessions, suggestions, promote, graph") {
  server_fixture f;
  f.agent("a", ok_rules);
  auto r = f.call("POST", "/v1/agents/a/sessions", R"({"session_id":"s1","project":"billing"})");
  REQUIRE(r.status == 201);
  CHECK(str_at(r.body, "/project") == "billing");
  REQUIRE(f.call("POST", "/v1/agents/a/sessions/s1/close", R"({"open_items":["reconcile the invoices"]})").status == 200);
  // The session's open items are of its project.
  r = f.call("GET", "/v1/agents/a/items?project=billing");
  CHECK(str_at(r.body, "/threads/0/text") == "reconcile the invoices");
  CHECK(size_at(f.call("GET", "/v1/agents/a/items").body, "/threads") == 0);
  r = f.call("POST", "/v1/agents/a/sessions", R"({"project":"billing"})");
  CHECK(size_at(r.body, "/items") == 1);
  CHECK(size_at(f.call("POST", "/v1/agents/a/sessions", "{}").body, "/items") == 0);
  // Suggestions: three billing sessions of one topic; promoted into another project on request.
  for (const char* sid : {"b2", "b3", "b4"})
    REQUIRE(f.call("POST", std::string{"/v1/agents/a/sessions/"} + sid + "/close",
                   R"({"project":"billing","topics":["migrate the billing database to postgres"]})")
                .status == 200);
  r = f.call("POST", "/v1/agents/a/sessions", R"({"project":"billing"})");
  REQUIRE(size_at(r.body, "/suggested_threads") == 1);
  std::string sug = str_at(r.body, "/suggested_threads/0/id");
  CHECK(str_at(r.body, "/suggestions/0/id") == sug);
  CHECK(size_at(f.call("POST", "/v1/agents/a/sessions", "{}").body, "/suggested_threads") == 0);
  r = f.call("POST", "/v1/suggestions/" + sug + "/promote", R"({"project":"ops"})");
  INFO(r.body);
  REQUIRE(r.status == 200);
  CHECK(str_at(r.body, "/thread/project") == "ops");
  CHECK(str_at(r.body, "/suggestion/status") == "promoted");
  CHECK(str_at(r.body, "/suggestion/promoted_thread") == str_at(r.body, "/thread/id"));
  // Graph stats by project: the default project has none of billing's or ops's triples.
  CHECK(int_at(f.call("GET", "/v1/graph/stats").body, "/triples") == 0);
  CHECK(int_at(f.call("GET", "/v1/graph/stats?project=billing").body, "/triples") == 1);
  CHECK(int_at(f.call("GET", "/v1/graph/stats?project=ops").body, "/triples") == 1);
}

TEST_CASE("work routes: the stats lens answers the seed's top subjects, objects, issues and agents") {
  server_fixture f;
  f.agent("a", ok_rules);
  REQUIRE(f.call("POST", "/v1/agents/a/items", R"({"text":"ship the export","session_id":"s1","relates_to":["GH-9"]})").status == 201);
  REQUIRE(f.call("POST", "/v1/agents/a/items", R"({"text":"write the docs","session_id":"s1","linear_issue":"GH-9"})").status == 201);
  auto r = f.call("GET", "/v1/graph/stats");
  INFO(r.body);
  REQUIRE(r.status == 200);
  CHECK(int_at(r.body, "/triples") == 4);
  CHECK(str_at(r.body, "/top_subjects/0/label") == "session:s1");
  CHECK(int_at(r.body, "/top_subjects/0/count") == 2);
  CHECK(str_at(r.body, "/top_objects/0/label") == "issue:GH-9");
  CHECK(int_at(r.body, "/top_objects/0/count") == 2);
  CHECK(str_at(r.body, "/issues_by_learning_count/0/issue") == "issue:GH-9");
  CHECK(int_at(r.body, "/issues_by_learning_count/0/count") == 2);
  CHECK(str_at(r.body, "/agents_by_contribution/0/agent") == "agent:a");
  CHECK(int_at(r.body, "/agents_by_contribution/0/count") == 4);
  // The seed's own shape, nested under stats.
  CHECK(int_at(r.body, "/stats/total_triples") == 4);
  CHECK(int_at(r.body, "/stats/predicate_distribution/created_thread") == 2);
  CHECK(str_at(r.body, "/stats/top_subjects/0/label") == "session:s1");
  CHECK(str_at(r.body, "/stats/issues_by_learning_count/0/issue") == "issue:GH-9");
}

TEST_CASE("work routes: suggestions over HTTP with the clock moved — the last 30 days only") {
  clocked clock;
  server_fixture f{clock.options()};
  f.agent("a", ok_rules);
  const std::string topic = R"({"topics":["migrate the billing database to postgres"]})";
  REQUIRE(f.call("POST", "/v1/agents/a/sessions/s1/close", topic).status == 200);
  REQUIRE(f.call("POST", "/v1/agents/a/sessions/s2/close", topic).status == 200);
  clock.now->fetch_add(45 * day);
  auto r = f.call("POST", "/v1/agents/a/sessions/s3/close", topic);
  CHECK(size_at(r.body, "/suggestions") == 0);
  // Two more within the window: s3, s4, s5 make one.
  clock.now->fetch_add(day);
  REQUIRE(size_at(f.call("POST", "/v1/agents/a/sessions/s4/close", topic).body, "/suggestions") == 0);
  clock.now->fetch_add(day);
  r = f.call("POST", "/v1/agents/a/sessions/s5/close", topic);
  REQUIRE(size_at(r.body, "/suggestions") == 1);
  CHECK(r.body.find(R"("sessions":["s3","s4","s5"])") != std::string::npos);
}
