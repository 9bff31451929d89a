#include "runtime/openai_engine.hpp"

#include <openssl/err.h>
#include <openssl/ssl.h>

#include <atomic>
#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <cmath>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <thread>
#include <unordered_map>

#include "runtime/model/compaction.hpp"
#include "runtime/model/json_reader.hpp"
#include "runtime/model/json_writer.hpp"
#include "runtime/openai_http.hpp"
#include "runtime/openai_sse.hpp"

namespace skein {
namespace {

namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
namespace net = boost::asio;
namespace ssl = boost::asio::ssl;
using tcp = net::ip::tcp;

constexpr size_t line_bytes_max = 1 << 20;        // one SSE line, and one event's data (one chunk)
constexpr size_t reply_depth_max = 16;            // nesting of a chunk or a whole reply (json_limits' count)
constexpr size_t tool_calls_max = 128;            // tool calls in one reply
constexpr size_t read_buffer_bytes = 16 << 10;    // body bytes taken per read
constexpr size_t error_body_bytes_max = 64 << 10;  // of a non-2xx body, read for its message
constexpr size_t header_bytes_max = 64 << 10;     // a response's header block

constexpr uint64_t retries_max = 100;             // a config's retries

constexpr const char* who = "openai engine";

struct model_price {
  double input_per_mtok = 0;
  double output_per_mtok = 0;
};

struct openai_config {
  openai_http::endpoint at;
  std::string model;
  std::string api_key_env = "OPENAI_API_KEY";
  std::string api_key;  // read once, when the engine is built
  std::string ca_file;
  std::optional<double> temperature;
  std::optional<uint64_t> max_tokens;
  bool stream = true;
  uint64_t timeout_ms = 120000;
  uint64_t retries = 4;
  uint64_t backoff_ms = 500;
  uint64_t backoff_max_ms = 20000;
  uint64_t retry_after_max_ms = 60000;
  uint64_t reply_bytes_max = 8 << 20;
  std::map<std::string, model_price, std::less<>> prices;
};

constexpr std::string_view config_fields[] = {
    "base_url", "model",          "api_key_env",        "ca_file",         "temperature", "max_tokens", "stream",
    "timeout_ms", "retries",      "backoff_ms",         "backoff_max_ms",  "retry_after_max_ms",
    "reply_bytes_max", "prices"};

// The object reader names "config.<field>" in its messages; the status names the field too.
status named(status s, std::string_view field) {
  if (s.is_ok() || !s.field().empty()) return s;
  return std::move(s).with_field(std::string{field});
}

// `field`: what the status names; empty: the unknown key itself.
status refuse_unknown(json::dom::object obj, std::string_view context, const std::string_view* known, size_t n,
                      std::string_view field = {}) {
  for (auto [key, value] : obj) {
    bool found = false;
    for (size_t i = 0; i < n && !found; ++i) found = known[i] == key;
    if (!found)
      return status::invalid_input(std::string{context} + "." + quote_input(key, 64) + ": unknown field")
          .with_field(std::string{field.empty() ? key : field});
  }
  return status::ok();
}

status parse_prices(json::dom::element el, openai_config* c) {
  json::dom::object obj;
  if (el.get(obj) != simdjson::SUCCESS)
    return status::invalid_input("config.prices: expected an object of models").with_field("prices");
  static constexpr std::string_view price_fields[] = {"input_per_mtok", "output_per_mtok"};
  for (auto [model, value] : obj) {
    std::string context = "config.prices." + quote_input(model, 64);
    json::object_reader r;
    model_price p;
    SKEIN_TRY(named(json::object_reader::open(value, context, &r), "prices"));
    json::dom::object po;
    if (value.get(po) != simdjson::SUCCESS) return status::invalid_input(context + ": expected an object");
    SKEIN_TRY(refuse_unknown(po, context, price_fields, 2, "prices"));
    SKEIN_TRY(named(r.number("input_per_mtok", &p.input_per_mtok, false), "prices"));
    SKEIN_TRY(named(r.number("output_per_mtok", &p.output_per_mtok, false), "prices"));
    if (!(p.input_per_mtok >= 0) || !(p.output_per_mtok >= 0) || !std::isfinite(p.input_per_mtok) ||
        !std::isfinite(p.output_per_mtok))
      return status::invalid_input(context + ": prices must be finite and not negative").with_field("prices");
    c->prices[std::string{model}] = p;
  }
  return status::ok();
}

status parse_config(std::string_view json_text, openai_config* c) {
  json::document doc;
  json::object_reader r;
  SKEIN_TRY(json::parse(json_text, {}, "openai engine config", &doc));
  SKEIN_TRY(json::object_reader::open(doc.root(), "config", &r));
  json::dom::object obj;
  if (doc.root().get(obj) != simdjson::SUCCESS) return status::invalid_input("config: expected an object");
  SKEIN_TRY(refuse_unknown(obj, "config", config_fields, std::size(config_fields)));
  std::string url;
  SKEIN_TRY(named(r.string("base_url", &url), "base_url"));
  SKEIN_TRY(openai_http::parse_base_url(url, &c->at));
  SKEIN_TRY(named(r.string("model", &c->model), "model"));
  SKEIN_TRY(named(r.string("api_key_env", &c->api_key_env, false), "api_key_env"));
  SKEIN_TRY(named(r.string("ca_file", &c->ca_file, false), "ca_file"));
  if (r.has("temperature")) {
    double t = 0;
    SKEIN_TRY(named(r.number("temperature", &t), "temperature"));
    if (!std::isfinite(t) || t < 0)
      return status::invalid_input("config.temperature: must be a number >= 0").with_field("temperature");
    c->temperature = t;
  }
  if (r.has("max_tokens")) {
    uint64_t m = 0;
    SKEIN_TRY(named(r.uint("max_tokens", &m), "max_tokens"));
    if (m == 0) return status::invalid_input("config.max_tokens: must be at least 1").with_field("max_tokens");
    c->max_tokens = m;
  }
  SKEIN_TRY(named(r.boolean("stream", &c->stream, false), "stream"));
  SKEIN_TRY(named(r.uint("timeout_ms", &c->timeout_ms, false), "timeout_ms"));
  SKEIN_TRY(named(r.uint("retries", &c->retries, false), "retries"));
  SKEIN_TRY(named(r.uint("backoff_ms", &c->backoff_ms, false), "backoff_ms"));
  SKEIN_TRY(named(r.uint("backoff_max_ms", &c->backoff_max_ms, false), "backoff_max_ms"));
  SKEIN_TRY(named(r.uint("retry_after_max_ms", &c->retry_after_max_ms, false), "retry_after_max_ms"));
  SKEIN_TRY(named(r.uint("reply_bytes_max", &c->reply_bytes_max, false), "reply_bytes_max"));
  if (r.has("prices")) {
    json::dom::element p;
    SKEIN_TRY(r.element("prices", &p));
    SKEIN_TRY(parse_prices(p, c));
  }
  if (c->model.empty()) return status::invalid_input("config.model: empty").with_field("model");
  if (c->retries > retries_max)
    return status::invalid_input("config.retries: at most retries_max (" + std::to_string(retries_max) + ")")
        .with_field("retries")
        .with_limit("retries_max");
  if (c->timeout_ms == 0) return status::invalid_input("config.timeout_ms: must be at least 1").with_field("timeout_ms");
  if (c->reply_bytes_max == 0)
    return status::invalid_input("config.reply_bytes_max: must be at least 1").with_field("reply_bytes_max");
  if (c->api_key_env.empty())
    return status::invalid_input("config.api_key_env: empty").with_field("api_key_env");
  // A CA file with plain http would suggest a protection the traffic does not have.
  if (!c->ca_file.empty() && !c->at.tls)
    return status::invalid_input("config.ca_file: only for an https:// base_url").with_field("ca_file");
  return openai_http::read_api_key(c->api_key_env, true, &c->api_key);
}

// ---- request body ----------------------------------------------------------

// Writes chat messages from working-conversation events. A step's text and
// tool calls (consecutive events) are held until the next event shows the step
// is over, then written as one assistant message.
class message_writer {
 public:
  explicit message_writer(json_writer* w) : w_(w) {}

  status add(const event& e) {
    switch (e.type) {
      case event_type::system_prompt:
        simple("system", e.text);
        return status::ok();
      case event_type::message:
        simple(e.role == message_role::user ? "user" : e.role == message_role::assistant ? "assistant" : "system",
               e.text);
        return status::ok();
      case event_type::assistant_text:
        if (!step_calls_.empty()) flush();  // text after calls: a step of its own
        step_text_ += e.text;
        step_open_ = true;
        return status::ok();
      case event_type::tool_call:
        step_calls_.push_back({e.call_id, e.name, e.json.empty() ? "{}" : e.json});
        step_open_ = true;
        return status::ok();
      case event_type::tool_result:
        flush();
        w_->begin_object();
        w_->field("role", "tool");
        w_->field("tool_call_id", e.call_id);
        w_->field("content", e.text);
        w_->end_object();
        return status::ok();
      case event_type::compaction: {
        flush();
        std::vector<event> compacted;
        json_limits limits;
        limits.json_bytes_max = std::numeric_limits<size_t>::max() / 2;  // stored already: read back as stored
        if (status s = decode_compacted(e.json, &compacted, limits); !s)
          return status::corruption(std::string{who} + ": the conversation's compaction does not decode: " +
                                    s.message());
        for (const auto& c : compacted)
          if (c.type != event_type::compaction) SKEIN_TRY(add(c));
        return status::ok();
      }
      case event_type::thinking:              // chat completions takes no reasoning back
      case event_type::local_system_message:  // for people only
      case event_type::signal:
      case event_type::result:
        return status::ok();
    }
    return status::ok();
  }

  void finish() { flush(); }

 private:
  void simple(std::string_view role, const std::string& text) {
    flush();
    w_->begin_object();
    w_->field("role", role);
    w_->field("content", text);
    w_->end_object();
  }

  void flush() {
    if (!step_open_) return;
    w_->begin_object();
    w_->field("role", "assistant");
    w_->key("content");
    if (step_text_.empty()) w_->null();
    else w_->string(step_text_);
    if (!step_calls_.empty()) {
      w_->key("tool_calls");
      w_->begin_array();
      for (const auto& c : step_calls_) {
        w_->begin_object();
        w_->field("id", c.call_id);
        w_->field("type", "function");
        w_->key("function");
        w_->begin_object();
        w_->field("name", c.name);
        w_->field("arguments", c.arguments_json);
        w_->end_object();
        w_->end_object();
      }
      w_->end_array();
    }
    w_->end_object();
    step_open_ = false;
    step_text_.clear();
    step_calls_.clear();
  }

  json_writer* w_;
  bool step_open_ = false;
  std::string step_text_;
  std::vector<requested_tool_call> step_calls_;
};

constexpr const char* title_instruction =
    "Give the conversation above a title of 3 to 6 words. Answer with the title alone, without quotes.";
constexpr const char* summary_instruction =
    "Summarize the conversation above for your own later use: keep the facts, decisions, open questions and "
    "the results of tool calls that still matter. Answer with the summary alone.";

status build_body(const openai_config& c, const engine_request& req, std::string* out) {
  out->clear();
  json_writer w{out};
  w.begin_object();
  w.field("model", c.model);
  w.key("messages");
  w.begin_array();
  message_writer mw{&w};
  for (const auto& e : req.conversation) SKEIN_TRY(mw.add(e));
  mw.finish();
  if (req.purpose != engine_purpose::run) {
    w.begin_object();
    w.field("role", "user");
    w.field("content", req.purpose == engine_purpose::title ? title_instruction : summary_instruction);
    w.end_object();
  }
  w.end_array();
  if (req.purpose == engine_purpose::run && !req.tools.empty()) {
    w.key("tools");
    w.begin_array();
    for (const auto& t : req.tools) {
      json::document schema;
      if (status s = json::parse(t.schema_json.empty() ? "{}" : t.schema_json, {}, "tool schema", &schema); !s)
        return status::invalid_input(std::string{who} + ": tool " + quote_input(t.name, 64) +
                                     ": schema_json: " + s.message());
      w.begin_object();
      w.field("type", "function");
      w.key("function");
      w.begin_object();
      w.field("name", t.name);
      if (!t.description.empty()) w.field("description", t.description);
      w.key("parameters");
      w.raw(simdjson::minify(schema.root()));
      w.end_object();
      w.end_object();
    }
    w.end_array();
  }
  if (c.temperature) w.field_number("temperature", *c.temperature);
  if (c.max_tokens) w.field_uint("max_tokens", *c.max_tokens);
  if (c.stream) {
    w.field_bool("stream", true);
    w.key("stream_options");
    w.begin_object();
    w.field_bool("include_usage", true);
    w.end_object();
  }
  w.end_object();
  return status::ok();
}

// ---- reply -------------------------------------------------------------------

// Assembles one step from a streamed reply's chunks (or a whole reply): text,
// reasoning, tool calls by index, usage. Every chunk is untrusted.
class reply_reader {
 public:
  reply_reader(const openai_config& c, std::function<void(std::string)> delta)
      : c_(c), delta_(std::move(delta)) {}

  bool done() const { return done_; }          // data: [DONE] seen
  bool finished() const { return finished_; }  // a finish_reason seen
  bool started() const { return started_; }    // any content, reasoning or tool call seen

  // One SSE event's data.
  status on_event(std::string_view data) {
    if (done_) return status::ok();  // anything after [DONE] is not read
    if (data == "[DONE]") {
      done_ = true;
      return status::ok();
    }
    return read_document(data, true);
  }

  // A reply that was not streamed.
  status on_whole(std::string_view body) { return read_document(body, false); }

  engine_step take_step() {
    engine_step s = std::move(step_);
    for (auto& [index, call] : calls_) {
      if (call.arguments_json.empty()) call.arguments_json = "{}";
      s.tool_calls.push_back(std::move(call));
    }
    if (auto p = c_.prices.find(c_.model); p != c_.prices.end()) {
      double in = static_cast<double>(s.usage.input_tokens + s.usage.cache_read_tokens);
      double out = static_cast<double>(s.usage.output_tokens);
      s.cost_usd = (in * p->second.input_per_mtok + out * p->second.output_per_mtok) / 1e6;
    }
    return s;
  }

 private:
  status bad(std::string_view why, std::string_view text) const {
    return status::corruption(std::string{who} + ": malformed " + (streamed_ ? "stream chunk" : "reply") + ": " +
                              std::string{why} + ": " +
                              quote_input(openai_http::scrub_key(std::string{text}, c_.api_key),
                                          openai_http::error_text_bytes_max));
  }

  status read_document(std::string_view text, bool streamed) {
    streamed_ = streamed;
    json::document doc;
    json_limits limits;
    limits.json_bytes_max = streamed ? line_bytes_max : c_.reply_bytes_max;
    limits.json_depth_max = reply_depth_max;
    if (status s = json::parse(text, limits, "reply", &doc); !s) {
      if (s.limit() == "json_depth_max")
        return status::invalid_input(std::string{who} + ": the reply nests deeper than reply_depth_max (" +
                                     std::to_string(reply_depth_max) + ")")
            .with_limit("reply_depth_max");
      return bad(s.message(), text);
    }
    json::dom::object root;
    if (doc.root().get(root) != simdjson::SUCCESS) return bad("not an object", text);
    json::dom::element el;
    if (root["error"].get(el) == simdjson::SUCCESS && !el.is_null())
      return status::io_error(std::string{who} + ": the server reported an error: " +
                              openai_http::error_message(simdjson::minify(root), c_.api_key));
    if (root["choices"].get(el) == simdjson::SUCCESS && !el.is_null()) {
      json::dom::array choices;
      if (el.get(choices) != simdjson::SUCCESS) return bad("choices is not an array", text);
      for (json::dom::element choice : choices) SKEIN_TRY(read_choice(choice, text));
    }
    if (root["usage"].get(el) == simdjson::SUCCESS && !el.is_null()) SKEIN_TRY(read_usage(el, text));
    return status::ok();
  }

  // *out gets a string field's value; absent and null leave it empty.
  static bool optional_string(json::dom::object o, std::string_view key, std::string_view* out) {
    *out = {};
    json::dom::element el;
    if (o[key].get(el) != simdjson::SUCCESS || el.is_null()) return true;
    return el.get(*out) == simdjson::SUCCESS;
  }

  status read_choice(json::dom::element choice, std::string_view text) {
    json::dom::object co;
    if (choice.get(co) != simdjson::SUCCESS) return bad("a choice is not an object", text);
    uint64_t index = 0;
    json::dom::element el;
    if (co["index"].get(el) == simdjson::SUCCESS && el.get(index) != simdjson::SUCCESS)
      return bad("choice index is not an unsigned integer", text);
    if (index != 0) return status::ok();  // n is 1: other choices are not asked for
    std::string_view finish;
    if (!optional_string(co, "finish_reason", &finish)) return bad("finish_reason is not a string", text);
    if (!finish.empty()) finished_ = true;
    json::dom::object d;
    if (co[streamed_ ? "delta" : "message"].get(el) != simdjson::SUCCESS || el.is_null()) return status::ok();
    if (el.get(d) != simdjson::SUCCESS) return bad(streamed_ ? "delta is not an object" : "message is not an object", text);
    std::string_view content, reasoning;
    if (!optional_string(d, "content", &content)) return bad("content is not a string", text);
    if (!content.empty()) {
      started_ = true;
      step_.text.append(content);
      if (streamed_ && delta_) delta_(std::string{content});
    }
    for (const char* key : {"reasoning_content", "reasoning"}) {
      if (!optional_string(d, key, &reasoning)) return bad(std::string{key} + " is not a string", text);
      if (!reasoning.empty()) {
        started_ = true;
        step_.thinking.append(reasoning);
      }
    }
    if (d["tool_calls"].get(el) == simdjson::SUCCESS && !el.is_null()) {
      json::dom::array calls;
      if (el.get(calls) != simdjson::SUCCESS) return bad("tool_calls is not an array", text);
      uint64_t position = 0;
      for (json::dom::element call : calls) SKEIN_TRY(read_tool_call(call, position++, text));
    }
    return status::ok();
  }

  // A streamed call names its index (its pieces share it); a whole reply's calls
  // are in order.
  status read_tool_call(json::dom::element call, uint64_t position, std::string_view text) {
    json::dom::object o;
    if (call.get(o) != simdjson::SUCCESS) return bad("a tool call is not an object", text);
    uint64_t index = position;
    json::dom::element el;
    if (o["index"].get(el) == simdjson::SUCCESS) {
      if (el.get(index) != simdjson::SUCCESS) return bad("tool call index is not an unsigned integer", text);
    } else if (streamed_) {
      return bad("a tool call delta without index", text);
    }
    if (!calls_.count(index) && calls_.size() >= tool_calls_max)
      return status::invalid_input(std::string{who} + ": the reply has more than tool_calls_max (" +
                                   std::to_string(tool_calls_max) + ") tool calls")
          .with_limit("tool_calls_max");
    std::string_view id, name, arguments;
    if (!optional_string(o, "id", &id)) return bad("tool call id is not a string", text);
    json::dom::object fn;
    if (o["function"].get(el) == simdjson::SUCCESS && !el.is_null()) {
      if (el.get(fn) != simdjson::SUCCESS) return bad("tool call function is not an object", text);
      if (!optional_string(fn, "name", &name)) return bad("tool call name is not a string", text);
      if (!optional_string(fn, "arguments", &arguments)) return bad("tool call arguments are not a string", text);
    }
    auto [it, created] = calls_.try_emplace(index);
    requested_tool_call& c = it->second;
    if (created) c.arguments_json.clear();  // pieces are appended to it
    started_ = true;
    // Some servers repeat the id and name in every piece: the first one holds.
    if (c.call_id.empty()) c.call_id = std::string{id};
    if (c.name.empty()) c.name = std::string{name};
    c.arguments_json.append(arguments);
    return status::ok();
  }

  status read_usage(json::dom::element usage, std::string_view text) {
    json::dom::object u;
    if (usage.get(u) != simdjson::SUCCESS) return bad("usage is not an object", text);
    uint64_t prompt = 0, completion = 0, cached = 0;
    json::dom::element el;
    if (u["prompt_tokens"].get(el) == simdjson::SUCCESS && el.get(prompt) != simdjson::SUCCESS)
      return bad("usage.prompt_tokens is not an unsigned integer", text);
    if (u["completion_tokens"].get(el) == simdjson::SUCCESS && el.get(completion) != simdjson::SUCCESS)
      return bad("usage.completion_tokens is not an unsigned integer", text);
    json::dom::object details;
    if (u["prompt_tokens_details"].get(el) == simdjson::SUCCESS && el.get(details) == simdjson::SUCCESS &&
        details["cached_tokens"].get(el) == simdjson::SUCCESS)
      if (el.get(cached) != simdjson::SUCCESS) cached = 0;  // optional detail: a malformed one counts nothing
    cached = std::min(cached, prompt);
    // skein counts cache reads apart from the other input tokens.
    step_.usage.input_tokens = prompt - cached;
    step_.usage.cache_read_tokens = cached;
    step_.usage.output_tokens = completion;
    return status::ok();
  }

  const openai_config& c_;
  std::function<void(std::string)> delta_;
  engine_step step_;
  std::map<uint64_t, requested_tool_call> calls_;  // by index, in index order
  bool streamed_ = true;
  bool done_ = false;
  bool finished_ = false;
  bool started_ = false;
};

// ---- calls -------------------------------------------------------------------

// One call in flight. The io thread alone touches everything but `cancelled`.
struct call_state {
  std::shared_ptr<const openai_config> c;
  ssl::context* tls = nullptr;  // the engine core's, for https; outlives every call
  std::string target;
  std::string body;
  status body_status;  // not ok: the request could not be built; the call fails with it
  engine_callbacks cb;
  std::atomic<bool> cancelled{false};
  bool done = false;
  std::function<void()> abort;  // stops the operation in progress (closes the connection)
  std::mt19937_64 rng;
  uint64_t id = 0;

  void deliver(engine_reply reply) {
    if (done || cancelled.load()) return;
    done = true;
    if (cb.on_done) cb.on_done(std::move(reply));
  }
  void delta(std::string text) {
    if (!done && !cancelled.load() && cb.on_delta) cb.on_delta(std::move(text));
  }
};

// Clears call_state::abort when the stream it closes goes away (declared after it).
struct abort_scope {
  call_state& cs;
  ~abort_scope() { cs.abort = nullptr; }
};

// One attempt's outcome: what it got, and whether trying again may help.
struct attempt {
  status result;
  bool retryable = false;
  bool started = false;  // the reply had begun: never retried
  uint64_t retry_after_ms = 0;
  engine_step step;
};

void connection_failed(const call_state& cs, beast::error_code ec, attempt* a) {
  const openai_config& c = *cs.c;
  a->retryable = true;
  if (ec == beast::error::timeout)
    a->result = status::io_error(std::string{who} + ": no answer within timeout_ms (" + std::to_string(c.timeout_ms) +
                                 ")")
                    .with_limit("timeout_ms");
  else
    a->result = status::io_error(std::string{who} + ": " + c.at.host + ":" + c.at.port + ": " + ec.message());
}

// Sends the request on a connected (for https: handshaken) stream and reads the reply.
template <class stream_type>
net::awaitable<void> exchange(stream_type& stream, call_state& cs, attempt* a) {
  const openai_config& c = *cs.c;
  auto& tcp_layer = beast::get_lowest_layer(stream);
  const auto timeout = std::chrono::milliseconds(c.timeout_ms);
  auto tok = net::as_tuple(net::use_awaitable);
  bhttp::request<bhttp::string_body> req{bhttp::verb::post, cs.target, 11};
  bool default_port = c.at.port == (c.at.tls ? "443" : "80");
  req.set(bhttp::field::host, default_port ? c.at.host : c.at.host + ":" + c.at.port);
  req.set(bhttp::field::content_type, "application/json");
  req.set(bhttp::field::accept, c.stream ? "text/event-stream" : "application/json");
  req.set(bhttp::field::user_agent, "skein");
  if (!c.api_key.empty()) req.set(bhttp::field::authorization, "Bearer " + c.api_key);
  req.body() = cs.body;
  req.prepare_payload();
  tcp_layer.expires_after(timeout);
  auto [ec_w, written] = co_await bhttp::async_write(stream, req, tok);
  if (ec_w) co_return connection_failed(cs, ec_w, a);

  bhttp::response_parser<bhttp::buffer_body> parser;
  parser.header_limit(header_bytes_max);
  parser.body_limit(std::numeric_limits<std::uint64_t>::max());  // counted below, to name our limit
  beast::flat_buffer buffer;
  tcp_layer.expires_after(timeout);
  auto [ec_h, got_h] = co_await bhttp::async_read_header(stream, buffer, parser, tok);
  if (ec_h) co_return connection_failed(cs, ec_h, a);
  const unsigned code = parser.get().result_int();
  const bool ok = code >= 200 && code < 300;
  std::string_view type{parser.get()[bhttp::field::content_type].data(),
                        parser.get()[bhttp::field::content_type].size()};
  const bool sse = ok && type.rfind("text/event-stream", 0) == 0;

  reply_reader reader{c, [&cs](std::string d) { cs.delta(std::move(d)); }};
  sse_parser events{line_bytes_max, [&reader](std::string_view data) { return reader.on_event(data); }};
  std::string whole;  // a body that is not an event stream
  std::vector<char> piece(read_buffer_bytes);
  uint64_t total = 0;
  while (!parser.is_done()) {
    parser.get().body().data = piece.data();
    parser.get().body().size = piece.size();
    tcp_layer.expires_after(timeout);
    // read_some: a stream's events are wanted as they come, not once a buffer is full.
    auto [ec, n] = co_await bhttp::async_read_some(stream, buffer, parser, tok);
    if (ec == bhttp::error::need_buffer) ec = {};
    if (cs.cancelled) co_return;
    size_t got = piece.size() - parser.get().body().size;
    total += got;
    std::string_view bytes{piece.data(), got};
    if (!ok) {
      whole.append(bytes.substr(0, error_body_bytes_max - std::min(whole.size(), error_body_bytes_max)));
      if (ec || whole.size() >= error_body_bytes_max) break;  // enough of an error body
      continue;
    }
    if (total > c.reply_bytes_max) {
      a->started = reader.started();
      a->result = status::invalid_input(std::string{who} + ": the reply is longer than reply_bytes_max (" +
                                        std::to_string(c.reply_bytes_max) + " bytes)")
                      .with_limit("reply_bytes_max");
      co_return;
    }
    if (sse) {
      if (status s = events.feed(bytes); !s) {
        a->started = reader.started();
        // The framing's own errors (line_bytes_max) do not say whose they are yet.
        bool ours = s.message().rfind(who, 0) == 0;
        a->result = ours ? s : status(s.code(), std::string{who} + ": " + s.message()).with_limit(s.limit());
        co_return;
      }
      if (reader.done()) break;  // nothing after [DONE] is read
    } else {
      whole.append(bytes);
    }
    if (ec) {
      connection_failed(cs, ec, a);
      a->started = reader.started();
      if (a->started) {
        a->retryable = false;
        a->result = status(a->result.code(), a->result.message() + " (the reply had begun: not retried)")
                        .with_limit(a->result.limit());
      }
      co_return;
    }
  }
  if (!ok) {
    std::string msg = std::string{who} + ": HTTP " + std::to_string(code) + ": " +
                      openai_http::error_message(whole, c.api_key);
    if (code == 429 || code >= 500) {
      a->retryable = true;
      auto ra = parser.get().find(bhttp::field::retry_after);
      if (ra != parser.get().end())
        a->retry_after_ms = openai_http::parse_retry_after_ms({ra->value().data(), ra->value().size()});
      a->result = status::overloaded(std::move(msg));
    } else {
      a->result = status::invalid_input(std::move(msg));
    }
    co_return;
  }
  if (sse) {
    a->started = reader.started();
    if (!reader.done() && !reader.finished()) {
      a->retryable = !a->started;
      a->result = status::io_error(std::string{who} + ": the stream ended before data: [DONE]");
      co_return;
    }
  } else if (status s = reader.on_whole(whole); !s) {
    a->result = s;
    co_return;
  }
  a->result = status::ok();
  a->step = reader.take_step();
}

net::awaitable<attempt> attempt_once(call_state& cs) {
  attempt a;
  const openai_config& c = *cs.c;
  auto ex = co_await net::this_coro::executor;
  auto tok = net::as_tuple(net::use_awaitable);
  tcp::resolver resolver{ex};
  tcp::resolver::results_type endpoints;
  {
    abort_scope scope{cs};
    cs.abort = [&resolver] { resolver.cancel(); };
    auto [ec, found] = co_await resolver.async_resolve(c.at.host, c.at.port, tok);
    if (cs.cancelled) co_return a;
    if (ec) {
      a.retryable = true;
      a.result = status::io_error(std::string{who} + ": cannot resolve " + c.at.host + ": " + ec.message());
      co_return a;
    }
    endpoints = std::move(found);
  }
  const auto timeout = std::chrono::milliseconds(c.timeout_ms);
  if (cs.tls == nullptr) {
    beast::tcp_stream stream{ex};
    abort_scope scope{cs};
    cs.abort = [&stream] { stream.close(); };
    stream.expires_after(timeout);
    auto [ec, ep] = co_await stream.async_connect(endpoints, tok);
    if (cs.cancelled) co_return a;
    if (ec) {
      connection_failed(cs, ec, &a);
      co_return a;
    }
    co_await exchange(stream, cs, &a);
    beast::error_code ignored;
    stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
    co_return a;
  }
  beast::ssl_stream<beast::tcp_stream> stream{ex, *cs.tls};
  abort_scope scope{cs};
  auto& tcp_layer = beast::get_lowest_layer(stream);
  cs.abort = [&tcp_layer] { tcp_layer.close(); };
  if (!openai_http::prepare_tls_peer(stream.native_handle(), c.at.host)) {
    a.result = status::io_error(std::string{who} + ": cannot set up TLS for " + c.at.host + ": " +
                                std::to_string(::ERR_get_error()));
    co_return a;
  }
  tcp_layer.expires_after(timeout);
  auto [ec, ep] = co_await tcp_layer.async_connect(endpoints, tok);
  if (cs.cancelled) co_return a;
  if (ec) {
    connection_failed(cs, ec, &a);
    co_return a;
  }
  std::tie(ec) = co_await stream.async_handshake(ssl::stream_base::client, tok);
  if (cs.cancelled) co_return a;
  if (ec) {
    // The same certificate would come back: not retried.
    if (std::string why = openai_http::tls_verify_failure(stream.native_handle()); !why.empty()) {
      a.result = status::io_error(std::string{who} + ": the TLS certificate of " + c.at.host + ":" + c.at.port +
                                  " failed verification: " + why);
      co_return a;
    }
    connection_failed(cs, ec, &a);
    co_return a;
  }
  co_await exchange(stream, cs, &a);
  // No close_notify: the reply is complete or abandoned, and waiting for the
  // server's could only add a stall.
  beast::error_code ignored;
  tcp_layer.socket().shutdown(tcp::socket::shutdown_both, ignored);
  co_return a;
}

net::awaitable<void> run_call(std::shared_ptr<call_state> cs) {
  if (!cs->body_status) co_return cs->deliver({cs->body_status, false, {}});
  const openai_config& c = *cs->c;
  attempt a;
  for (uint64_t n = 1;; ++n) {
    if (cs->cancelled) co_return;
    a = co_await attempt_once(*cs);
    if (cs->cancelled) co_return;
    if (a.result) co_return cs->deliver({status::ok(), false, std::move(a.step)});
    if (!a.retryable || a.started || n > c.retries) break;
    uint64_t delay_ms = a.retry_after_ms > 0 ? std::min(a.retry_after_ms, c.retry_after_max_ms)
                                             : openai_http::backoff_delay_ms(n, c.backoff_ms, c.backoff_max_ms, cs->rng);
    net::steady_timer timer{co_await net::this_coro::executor};
    abort_scope scope{*cs};
    cs->abort = [&timer] { timer.cancel(); };
    timer.expires_after(std::chrono::milliseconds(delay_ms));
    co_await timer.async_wait(net::as_tuple(net::use_awaitable));
  }
  std::string tries = a.retryable && !a.started ? " (after " + std::to_string(c.retries + 1) + " attempts)" : "";
  status s = status(a.result.code(), a.result.message() + tries);
  if (!tries.empty()) s = std::move(s).with_limit("retries");
  else if (!a.result.limit().empty()) s = std::move(s).with_limit(a.result.limit());
  cs->deliver({std::move(s), false, {}});
}

// What the engine and the handles of its calls share. The handles hold it weakly:
// a handle may outlive its engine.
struct engine_core {
  std::unique_ptr<ssl::context> tls;  // for https; here so that a detached io thread keeps it
  net::io_context ioc{1};
  std::mutex mu;  // guards everything below
  std::optional<net::executor_work_guard<net::io_context::executor_type>> work;
  std::thread io_thread;
  std::unordered_map<uint64_t, std::weak_ptr<call_state>> live;
  uint64_t next_id = 0;
};

void abort_call(engine_core& core, const std::shared_ptr<call_state>& cs) {
  cs->cancelled = true;
  net::post(core.ioc, [cs] {
    if (cs->abort) cs->abort();
  });
}

class openai_call_handle final : public call_handle {
 public:
  openai_call_handle(std::weak_ptr<engine_core> core, std::weak_ptr<call_state> call)
      : core_(std::move(core)), call_(std::move(call)) {}
  void cancel() override {
    auto cs = call_.lock();
    auto core = core_.lock();
    if (cs && core) abort_call(*core, cs);
    else if (cs) cs->cancelled = true;
  }

 private:
  std::weak_ptr<engine_core> core_;
  std::weak_ptr<call_state> call_;
};

class openai_engine final : public engine {
 public:
  openai_engine(std::shared_ptr<const openai_config> c, std::unique_ptr<ssl::context> tls)
      : c_(std::move(c)), core_(std::make_shared<engine_core>()) {
    core_->tls = std::move(tls);
  }

  ~openai_engine() override {
    std::vector<std::shared_ptr<call_state>> calls;
    {
      std::lock_guard lock{core_->mu};
      for (auto& [id, weak] : core_->live)
        if (auto cs = weak.lock()) calls.push_back(std::move(cs));
      core_->work.reset();
    }
    for (auto& cs : calls) abort_call(*core_, cs);
    if (!core_->io_thread.joinable()) return;
    // Dropped by a callback of its own call: the io thread cannot wait for
    // itself; it ends by itself once the aborted calls have, and holds the core
    // until then.
    if (core_->io_thread.get_id() == std::this_thread::get_id()) core_->io_thread.detach();
    else core_->io_thread.join();
  }

  std::unique_ptr<call_handle> start(engine_request request, engine_callbacks callbacks) override {
    auto cs = std::make_shared<call_state>();
    cs->c = c_;
    cs->tls = core_->tls.get();
    cs->target = c_->at.path_prefix + "/chat/completions";
    cs->body_status = build_body(*c_, request, &cs->body);
    cs->cb = std::move(callbacks);
    {
      std::lock_guard lock{core_->mu};
      cs->id = ++core_->next_id;
      cs->rng.seed(seed_ ^ cs->id);
      core_->live[cs->id] = cs;
      if (!core_->io_thread.joinable()) {
        core_->work.emplace(net::make_work_guard(core_->ioc));
        // The thread holds the core: were it detached (see the destructor), the
        // io_context still outlives its run().
        core_->io_thread = std::thread([core = core_] { run_io(*core); });
      }
    }
    engine_core* core = core_.get();  // outlives the io thread, which runs the completion
    net::co_spawn(core->ioc, run_call(cs), [core, cs](std::exception_ptr e) {
      if (e) {  // not expected (allocation): the call fails rather than never answering
        std::string what = "unknown";
        try {
          std::rethrow_exception(e);
        } catch (const std::exception& x) {
          what = x.what();
        } catch (...) {
        }
        cs->deliver({status::io_error(std::string{who} + ": internal error: " + what), false, {}});
      }
      std::lock_guard lock{core->mu};
      core->live.erase(cs->id);
    });
    return std::make_unique<openai_call_handle>(core_, cs);
  }

 private:
  static void run_io(engine_core& core) {
    for (;;) {
      try {
        core.ioc.run();
        return;
      } catch (...) {  // a handler threw: the others still run
      }
    }
  }

  const std::shared_ptr<const openai_config> c_;
  const std::shared_ptr<engine_core> core_;
  const uint64_t seed_ = std::random_device{}();
};

}  // namespace

status make_openai_engine(std::string_view config_json, timer_service&, std::shared_ptr<engine>* out) {
  auto c = std::make_shared<openai_config>();
  SKEIN_TRY(parse_config(config_json, c.get()));
  std::unique_ptr<ssl::context> tls;
  if (c->at.tls) SKEIN_TRY(openai_http::make_tls_context(c->ca_file, who, &tls));
  *out = std::make_shared<openai_engine>(std::move(c), std::move(tls));
  return status::ok();
}

}  // namespace skein
