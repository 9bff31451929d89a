#include "runtime/memory_service.hpp"

#include <condition_variable>

#include "runtime/model/ids.hpp"
#include "runtime/model/json_reader.hpp"
#include "runtime/model/json_writer.hpp"

namespace skein {
namespace {

constexpr uint64_t tool_k_default = 5;
// Hits whose event is gone (a thread deleted meanwhile) are skipped: ask the
// index for a few more than k so that a skip rarely shortens the answer.
constexpr size_t search_overfetch = 8;

// `text` cut to at most `bytes_max` bytes at a UTF-8 character boundary, with "…" when cut.
std::string snippet_of(std::string_view text, size_t bytes_max) {
  if (text.size() <= bytes_max) return std::string{text};
  size_t cut = bytes_max;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;  // continuation byte
  return std::string{text.substr(0, cut)} + "\xE2\x80\xA6";
}

class noop_handle final : public call_handle {
 public:
  void cancel() override {}
};

class memory_search_tool final : public tool {
 public:
  explicit memory_search_tool(std::shared_ptr<memory_service> memory) : memory_(std::move(memory)) {
    spec_.name = "memory_search";
    spec_.description =
        "Searches the messages of every thread of this agent for the ones closest in meaning to the query; "
        "returns thread id, seq, role, score and a snippet of each, best first.";
    spec_.schema_json =
        R"({"type":"object","properties":{"query":{"type":"string"},"k":{"type":"integer","minimum":1,"maximum":)" +
        std::to_string(memory_search_k_max) + R"(}},"required":["query"]})";
  }

  const tool_spec& spec() const override { return spec_; }

  std::unique_ptr<call_handle> invoke(tool_invocation call, std::function<void(tool_output)> done) override {
    std::string query, agent;
    uint64_t k = tool_k_default;
    status s = parse_arguments(call.arguments_json, &query, &k);
    if (s) s = memory_->agent_of_thread(call.thread_id, &agent);
    if (!s) {
      done({"memory_search: " + s.message(), true});
      return std::make_unique<noop_handle>();
    }
    memory_->search(std::move(agent), std::move(query), k,
                    [done = std::move(done)](status r, std::vector<memory_hit> hits) {
                      if (!r) done({"memory_search: " + r.message(), true});
                      else done({memory_hits_json(hits), false});
                    });
    return std::make_unique<noop_handle>();
  }

 private:
  static status parse_arguments(const std::string& json_text, std::string* query, uint64_t* k) {
    json::document doc;
    json::object_reader r;
    SKEIN_TRY(json::parse_object(json_text, {}, "arguments", &doc, &r));
    SKEIN_TRY(r.string("query", query));
    return r.uint("k", k, false);
  }

  tool_spec spec_;
  std::shared_ptr<memory_service> memory_;
};

}  // namespace

std::string memory_hits_json(const std::vector<memory_hit>& hits) {
  std::string out;
  json_writer w{&out};
  w.begin_object();
  w.key("hits");
  w.begin_array();
  for (const auto& h : hits) {
    w.begin_object();
    w.field("thread_id", h.thread_id);
    w.field_uint("seq", h.seq);
    w.field("role", h.role);
    w.field_number("score", h.score);
    w.field("snippet", h.snippet);
    w.end_object();
  }
  w.end_array();
  w.end_object();
  return out;
}

memory_service::memory_service(event_log& log, std::map<std::string, embedder_factory> embedders)
    : factories_(std::move(embedders)), log_(&log), timers_(nullptr) {}

void memory_service::start_searches(timer_service& timers) {
  std::unique_lock life{life_mu_};
  if (log_ != nullptr) timers_ = &timers;
}

status memory_service::rebuild() {
  std::shared_lock life{life_mu_};
  if (log_ == nullptr) return status::io_error("memory: the runtime is closed");
  auto start = std::chrono::steady_clock::now();
  size_t skipped = 0;
  uint64_t rows = 0, refused = 0;
  SKEIN_TRY(log_->scan_embeddings(
      [&](std::string_view thread, uint64_t seq, const embedding_record& r) {
        if (index_.add(thread, seq, r).is_ok()) ++rows;
        else ++refused;  // dims other than the agent's first row: a row the index cannot hold
      },
      &skipped));
  rebuilt_.rows = rows;
  rebuilt_.skipped = skipped + refused;
  rebuilt_.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return status::ok();
}

status memory_service::agent_of_thread(const std::string& thread_id, std::string* agent_id) {
  std::shared_lock life{life_mu_};
  if (log_ == nullptr) return status::io_error("memory: the runtime is closed");
  manifest m;
  SKEIN_TRY(log_->read_manifest(thread_id, &m));
  *agent_id = m.agent_id;
  return status::ok();
}

status memory_service::embedder_for(const std::string& agent_id, std::shared_ptr<embedder>* out) {
  {
    std::lock_guard lock{cache_mu_};
    if (auto it = embedders_.find(agent_id); it != embedders_.end()) {
      *out = it->second;
      return status::ok();
    }
  }
  std::shared_lock life{life_mu_};
  if (log_ == nullptr || timers_ == nullptr) return status::io_error("memory: the runtime is closed or not started");
  agent_config a;
  SKEIN_TRY(log_->read_agent(agent_id, &a));
  if (a.effects.embedder.empty())
    return status::invalid_input("agent " + agent_id + " has no embedder (effects.embedder is empty)")
        .with_field("agent.effects.embedder");
  auto f = factories_.find(a.effects.embedder);
  if (f == factories_.end())
    return status::invalid_input("agent " + agent_id + ": no embedder named '" + a.effects.embedder +
                                 "' is registered")
        .with_field("agent.effects.embedder");
  std::shared_ptr<embedder> e;
  status s;
  try {  // host code: a factory that throws fails this search only
    s = f->second(a.effects.embedder_config, *timers_, &e);
  } catch (const std::exception& x) {
    s = status::invalid_input(std::string("the embedder factory threw: ") + x.what());
  } catch (...) {
    s = status::invalid_input("the embedder factory threw a non-standard exception");
  }
  if (!s) return s;
  if (!e) return status::invalid_input("agent " + agent_id + ": the embedder factory built no embedder");
  std::lock_guard lock{cache_mu_};
  *out = embedders_.try_emplace(agent_id, std::move(e)).first->second;  // a racing twin wins once
  return status::ok();
}

status memory_service::hits_for(const std::vector<memory_match>& matches, size_t k,
                                std::vector<memory_hit>* out) {
  std::shared_lock life{life_mu_};
  if (log_ == nullptr) return status::io_error("memory: the runtime is closed");
  out->clear();
  std::vector<event> one;
  for (const auto& m : matches) {
    if (out->size() == k) break;
    status s = log_->read_events(m.thread_id, m.seq, 1, &one);
    if (s.code() == errc::not_found || (s && (one.empty() || one[0].seq != m.seq))) continue;  // gone
    SKEIN_TRY(s);
    memory_hit h;
    h.thread_id = m.thread_id;
    h.seq = m.seq;
    h.role = m.assistant ? "assistant" : "user";
    h.score = m.score;
    h.snippet = snippet_of(one[0].text, memory_snippet_bytes_max);
    out->push_back(std::move(h));
  }
  return status::ok();
}

void memory_service::search(std::string agent_id, std::string query, size_t k,
                            std::function<void(status, std::vector<memory_hit>)> done) {
  auto fail = [&](status s) { done(std::move(s), {}); };
  if (status s = validate_id(agent_id, "agent id"); !s) return fail(s.with_field("agent"));
  if (query.empty()) return fail(status::invalid_input("memory search: the query is empty").with_field("q"));
  if (query.size() > memory_query_bytes_max)
    return fail(status::invalid_input("memory search: the query is longer than " +
                                      std::to_string(memory_query_bytes_max) + " bytes")
                    .with_field("q")
                    .with_limit("memory_query_bytes_max"));
  if (k == 0 || k > memory_search_k_max)
    return fail(status::invalid_input("memory search: k must be 1.." + std::to_string(memory_search_k_max) +
                                      ", not " + std::to_string(k))
                    .with_field("k")
                    .with_limit("memory_search_k_max"));
  std::shared_ptr<embedder> e;
  if (status s = embedder_for(agent_id, &e); !s) return fail(std::move(s));
  auto on_embedded = [self = shared_from_this(), agent_id, k, done](embed_reply r) {
    if (!r.result) return done(std::move(r.result), {});
    if (r.vectors.size() != 1) return done(status::io_error("memory search: the embedder answered no vector"), {});
    std::vector<memory_match> matches;
    status s = self->index_.search(agent_id, r.vectors[0], k + search_overfetch, &matches);
    std::vector<memory_hit> hits;
    if (s) s = self->hits_for(matches, k, &hits);
    done(std::move(s), std::move(hits));
  };
  try {  // host code
    e->embed({std::move(query)}, std::move(on_embedded));
  } catch (const std::exception& x) {
    fail(status::io_error(std::string("memory search: the embedder threw: ") + x.what()));
  }
}

status memory_service::search_wait(std::string agent_id, std::string query, size_t k,
                                   std::vector<memory_hit>* out) {
  struct waiter {
    std::mutex mu;
    std::condition_variable cv;
    bool done = false;  // guarded by mu
    status result;
    std::vector<memory_hit> hits;
  };
  auto w = std::make_shared<waiter>();  // shared: a late answer after a timeout finds it alive
  search(std::move(agent_id), std::move(query), k, [w](status s, std::vector<memory_hit> hits) {
    std::lock_guard lock{w->mu};
    w->result = std::move(s);
    w->hits = std::move(hits);
    w->done = true;
    w->cv.notify_all();
  });
  std::unique_lock lock{w->mu};
  if (!w->cv.wait_for(lock, std::chrono::milliseconds(memory_search_timeout_ms), [&] { return w->done; }))
    return status::overloaded("memory search: the embedder did not answer within " +
                              std::to_string(memory_search_timeout_ms) + " ms")
        .with_limit("memory_search_timeout_ms");
  if (w->result) *out = std::move(w->hits);
  return w->result;
}

void memory_service::close() {
  std::unique_lock life{life_mu_};
  log_ = nullptr;
  timers_ = nullptr;
}

std::shared_ptr<tool> make_memory_search_tool(std::shared_ptr<memory_service> memory) {
  return std::make_shared<memory_search_tool>(std::move(memory));
}

}  // namespace skein
