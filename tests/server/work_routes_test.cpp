// The work-item routes over HTTP (tools/API.md, "Work items"): happy paths,
// errors with their status, code and field, the auth matrix and the bounds.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

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
