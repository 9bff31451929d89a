// Fuzz target: the HTTP API handler (tools/server/api.cpp) on requests built from
// the input: method, target, headers (Authorization with an admin, a scoped, a
// foreign or a garbage token; Last-Event-ID; Content-Length; Idempotency-Key) and
// body. The runtime is in memory (durability memory) with two agents and a thread
// each; it is reopened every `requests_per_runtime` inputs so state stays small.
//
// Checks: every request is answered (within answer_wait_ms; a scripted run may be
// slower, that is not a finding), with a status in 200..599; JSON bodies are JSON;
// errors carry {"error":{"code":..}}; without a valid token only /healthz and the
// viewer's compiled-in files (/ui, /ui/...) answer below 400, and a viewer path
// answers one of its files, 404 or 405, nothing else; a token scoped to another agent never succeeds on this agent's
// thread while it exists.
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "runtime/model/json_codec.hpp"
#include "runtime/model/json_reader.hpp"
#include "tests/fuzz/fuzz_check.hpp"
#include "tests/fuzz/fuzz_input.hpp"
#include "tools/server/api.hpp"
#include "tools/server/ui.hpp"

namespace {

using namespace skein;

constexpr auto answer_wait_ms = std::chrono::milliseconds(2000);
constexpr int requests_per_runtime = 5000;
constexpr const char* admin_token = "admin-token-0123456789";
constexpr const char* scoped_token = "scoped-token-0123456789";    // agent "fz"
constexpr const char* foreign_token = "foreign-token-0123456789";  // agent "other"

// Records the answer; a run answered later (wait=true) lands here from a runtime thread.
class fuzz_stream : public http::event_stream {
 public:
  bool send(std::string bytes) override {
    std::lock_guard<std::mutex> lock{mu_};
    return !closed_;
  }
  void close() override {
    std::vector<std::function<void()>> fns;
    {
      std::lock_guard<std::mutex> lock{mu_};
      if (closed_) return;
      closed_ = true;
      fns.swap(on_close_);
    }
    for (auto& fn : fns) fn();
  }
  void on_close(std::function<void()> fn) override {
    {
      std::lock_guard<std::mutex> lock{mu_};
      if (!closed_) return on_close_.push_back(std::move(fn));
    }
    fn();
  }

 private:
  std::mutex mu_;  // guards closed_ and on_close_
  bool closed_ = false;
  std::vector<std::function<void()>> on_close_;
};

class fuzz_exchange : public http::exchange {
 public:
  void reply(http::response r) override {
    std::lock_guard<std::mutex> lock{mu_};
    SKEIN_FUZZ_CHECK(!answered_, "an exchange is answered once");
    answered_ = true;
    response_ = std::move(r);
    cv_.notify_all();
  }
  std::shared_ptr<http::event_stream> stream(http::header_list) override {
    std::lock_guard<std::mutex> lock{mu_};
    SKEIN_FUZZ_CHECK(!answered_, "an exchange is answered once");
    answered_ = true;
    stream_ = std::make_shared<fuzz_stream>();
    cv_.notify_all();
    return stream_;
  }
  // The response, or nullopt for a stream or no answer in time.
  bool wait(http::response* out, std::shared_ptr<fuzz_stream>* stream) {
    std::unique_lock<std::mutex> lock{mu_};
    if (!cv_.wait_for(lock, answer_wait_ms, [&] { return answered_; })) return false;
    *out = response_;
    *stream = stream_;
    return true;
  }

 private:
  std::mutex mu_;  // guards everything below
  std::condition_variable cv_;
  bool answered_ = false;
  http::response response_;
  std::shared_ptr<fuzz_stream> stream_;
};

struct world {
  std::unique_ptr<runtime> rt;
  std::unique_ptr<server::api> api;
  std::string thread_fz, thread_other;
  int served = 0;

  world() {
    runtime_options o;
    o.data_dir = "fuzz";
    o.mode = durability::memory;
    o.worker_threads = 2;
    status s = runtime::open(std::move(o), &rt);
    if (!s) std::fprintf(stderr, "runtime::open: %s\n", s.to_string().c_str());
    SKEIN_FUZZ_CHECK(s.is_ok(), "the runtime opens");
    for (const char* id : {"fz", "other"}) {
      agent_config a;
      a.id = id;
      a.system_prompt = "fuzz";
      a.engine_config = R"({"default":{"reply":"ok"}})";
      SKEIN_FUZZ_CHECK(rt->create_agent(a).is_ok(), "an agent is created");
    }
    thread_fz = make_thread("fz");
    thread_other = make_thread("other");
    server::token_store tokens;
    std::string file = std::string{admin_token} + " admin\n" + scoped_token + " fz\n" + foreign_token + " other\n";
    SKEIN_FUZZ_CHECK(server::token_store::parse(file, &tokens).is_ok(), "the tokens parse");
    api = std::make_unique<server::api>(*rt, tokens, server::api_options{});
  }
  ~world() {
    api.reset();
    rt->close().ignore();
  }

  std::string make_thread(const std::string& agent) {
    thread_options t;
    t.agent_id = agent;
    manifest m;
    SKEIN_FUZZ_CHECK(rt->create_thread(t, &m).is_ok(), "a thread is created");
    return m.id;
  }
};

// Never destroyed by a static destructor: closing a CAF system from one is not
// safe. libFuzzer ends the process with the runtime's threads running; the
// replay closes it from main (skein_fuzz_teardown), or a run answered late
// could call into what exit() is tearing down ("pure virtual method called").
world* current = nullptr;

world& the_world() {
  if (!current || current->served >= requests_per_runtime) {
    delete current;
    current = new world;
  }
  ++current->served;
  return *current;
}

enum class who { none, admin, scoped, foreign, garbage };

std::string build_target(fuzz::input& in, const world& w) {
  if (in.boolean()) return in.string(256);
  if (in.below(8) == 0) return "/ui" + in.string(64);  // the viewer's files, public
  static const char* const collections[] = {"threads", "agents", "import", "prune", "metrics", "healthz"};
  static const char* const actions[] = {"entries", "stream", "cancel", "fork", "diagnose", "reconcile", "export", ""};
  std::string t = "/v1/";
  std::string collection = in.pick(collections);
  if (collection == "metrics" || collection == "healthz") return "/" + collection;
  t += collection;
  switch (in.below(4)) {
    case 0: break;
    case 1: t += "/" + w.thread_fz; break;
    case 2: t += "/" + w.thread_other; break;
    default: t += "/" + in.string(64); break;
  }
  std::string action = in.pick(actions);
  if (!action.empty()) t += "/" + action;
  if (in.boolean()) t += "?" + in.string(128);
  return t;
}

// The request's token, and who it speaks for.
who add_authorization(fuzz::input& in, http::request* req) {
  who w = static_cast<who>(in.below(5));
  switch (w) {
    case who::none: break;
    case who::admin: req->headers["authorization"] = std::string{"Bearer "} + admin_token; break;
    case who::scoped: req->headers["authorization"] = std::string{"Bearer "} + scoped_token; break;
    case who::foreign: req->headers["authorization"] = std::string{"Bearer "} + foreign_token; break;
    case who::garbage: req->headers["authorization"] = in.string(64); break;
  }
  return w;
}

// What a foreign token must never change: whether this agent's thread exists,
// and its children.
struct thread_mark {
  bool exists = false;
  uint64_t children = 0;
};

thread_mark mark_of(world& w) {
  manifest m;
  thread_mark t;
  t.exists = w.rt->get_thread(w.thread_fz, &m).is_ok();
  t.children = m.children_count;
  return t;
}

void check_response(const http::response& r, const http::request& req, who caller, world& w,
                    const thread_mark& before) {
  SKEIN_FUZZ_CHECK(r.status >= 200 && r.status <= 599, "the status is an HTTP status");
  if (r.content_type == "application/json" && !r.body.empty()) {
    std::string minified;
    SKEIN_FUZZ_CHECK(normalize_json(r.body, "response", &minified, {64 << 20, 256}).is_ok(),
                     "a JSON response is JSON");
  }
  if (r.status >= 400) {
    json::document doc;
    json::dom::element err;
    json::object_reader o, e;
    std::string code;
    bool shaped = json::parse(r.body, {}, "body", &doc).is_ok() && json::object_reader::open(doc.root(), "body", &o).is_ok() &&
                  o.element("error", &err).is_ok() && json::object_reader::open(err, "error", &e).is_ok() &&
                  e.string("code", &code).is_ok();
    SKEIN_FUZZ_CHECK(shaped && !code.empty(), "an error names its code");
  }
  bool authenticated = caller == who::admin || caller == who::scoped || caller == who::foreign;
  if (server::is_ui_path(req.path)) {
    // Public, whoever asks: a compiled-in file (or 304 for it), else 404/405.
    const server::embedded_file* file = server::find_ui_file(req.path);
    bool served = (r.status == 200 && file && r.body == file->bytes) || (r.status == 304 && file && r.body.empty());
    SKEIN_FUZZ_CHECK(served || r.status == 404 || r.status == 405,
                     "a viewer path answers one of the viewer's files, 404 or 405");
  } else if (!authenticated && req.path != "/healthz") {
    SKEIN_FUZZ_CHECK(r.status == 401, "without a valid token only /healthz and the viewer answer");
  }
  if (caller == who::foreign) {
    thread_mark after = mark_of(w);
    SKEIN_FUZZ_CHECK(after.exists == before.exists && after.children == before.children,
                     "a foreign token never deletes this agent's thread nor adds it children");
  }
}

}  // namespace

// Called by the replay (replay_main.cpp) after the last input.
extern "C" void skein_fuzz_teardown() {
  delete current;
  current = nullptr;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  world& w = the_world();
  fuzz::input in{data, size};
  static const char* const methods[] = {"GET", "POST", "DELETE", "PUT", "HEAD", "OPTIONS"};
  http::request req;
  req.method = in.boolean() ? std::string{in.pick(methods)} : in.string(16);
  req.target = build_target(in, w);
  if (!http::parse_target(req.target, &req.path, &req.query)) return 0;  // the server answers 400 itself
  who caller = add_authorization(in, &req);
  if (in.boolean()) req.headers["last-event-id"] = in.string(24);
  if (in.boolean()) req.headers["idempotency-key"] = in.string(48);
  bool honest_length = in.boolean();
  std::string claimed_length = honest_length ? "" : in.string(24);
  req.body = in.rest();
  req.headers["content-length"] = honest_length ? std::to_string(req.body.size()) : claimed_length;

  thread_mark before = mark_of(w);
  auto ex = std::make_shared<fuzz_exchange>();
  try {
    // As the server does: decided from the head first, the body read only if admitted.
    http::request head = req;
    head.body.clear();
    http::admission a = w.api->admit(head);
    if (a.refuse) ex->reply(std::move(*a.refuse));
    else w.api->handle(req, ex);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "handler threw: %s\n", e.what());
    SKEIN_FUZZ_CHECK(false, "the handler answers with a status, never an exception");
  }
  http::response r;
  std::shared_ptr<fuzz_stream> stream;
  if (!ex->wait(&r, &stream)) return 0;  // a slow scripted run: it answers later
  if (stream) {
    stream->close();  // ends the subscription as a client hanging up would
    return 0;
  }
  static const bool verbose = std::getenv("SKEIN_FUZZ_VERBOSE") != nullptr;  // to check the seeds
  if (verbose) std::fprintf(stderr, "%s %s -> %d %.200s\n", req.method.c_str(), req.target.c_str(), r.status, r.body.c_str());
  check_response(r, req, caller, w, before);
  return 0;
}
