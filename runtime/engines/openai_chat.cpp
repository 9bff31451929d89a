#include "runtime/engines/openai_chat.hpp"

#include <cmath>
#include <limits>

#include "runtime/model/compaction.hpp"
#include "runtime/model/json_reader.hpp"
#include "runtime/model/json_writer.hpp"

namespace skein::openai_chat {
namespace {

constexpr std::string_view config_fields[] = {
    "base_url", "model",          "api_key_env",        "ca_file",         "temperature", "max_tokens", "stream",
    "timeout_ms", "retries",      "backoff_ms",         "backoff_max_ms",  "retry_after_max_ms",
    "reply_bytes_max", "prices"};

// The object reader names "config.<field>" in its messages (and its fields);
// the status names the engine config's own field, the key a user wrote.
status named(status s, std::string_view field) {
  if (s.is_ok()) return s;
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

}  // namespace

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

// ---- reply -------------------------------------------------------------------

class reply_reader::impl {
 public:
  impl(const openai_config& c, std::function<void(std::string)> delta)
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

reply_reader::reply_reader(const openai_config& c, std::function<void(std::string)> delta)
    : impl_(std::make_unique<impl>(c, std::move(delta))) {}
reply_reader::~reply_reader() = default;
bool reply_reader::done() const { return impl_->done(); }
bool reply_reader::finished() const { return impl_->finished(); }
bool reply_reader::started() const { return impl_->started(); }
status reply_reader::on_event(std::string_view data) { return impl_->on_event(data); }
status reply_reader::on_whole(std::string_view body) { return impl_->on_whole(body); }
engine_step reply_reader::take_step() { return impl_->take_step(); }

}  // namespace skein::openai_chat
