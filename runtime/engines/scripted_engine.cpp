#include "runtime/engines/scripted_engine.hpp"

#include <atomic>
#include <optional>
#include <regex>

#include "runtime/model/json_reader.hpp"

namespace skein {
namespace {

struct scripted_rule {
  std::optional<std::regex> match;
  std::string match_text;
  std::optional<uint32_t> turn;
  std::string reply;
  bool has_reply = false;
  std::string thinking;
  std::vector<requested_tool_call> tool_calls;
  std::optional<uint64_t> latency_ms;
  std::vector<std::string> deltas;
  std::string error;
  bool stall = false;
  bool resume_fails = false;
  std::optional<token_usage> usage;
  double cost_usd = 0;
};

status parse_rule(json::dom::element el, const std::string& context, bool matching, scripted_rule* out) {
  json::object_reader r;
  SKEIN_TRY(json::object_reader::open(el, context, &r));
  scripted_rule rule;
  if (matching && r.has("match")) {
    SKEIN_TRY(r.string("match", &rule.match_text));
    try {
      rule.match.emplace(rule.match_text, std::regex::ECMAScript);
    } catch (const std::regex_error& e) {
      return status::invalid_input(r.name("match") + ": invalid regex: " + e.what());
    }
  }
  if (matching && r.has("turn")) {
    uint64_t turn = 0;
    SKEIN_TRY(r.uint("turn", &turn));
    rule.turn = static_cast<uint32_t>(turn);
  }
  rule.has_reply = r.has("reply");
  SKEIN_TRY(r.string("reply", &rule.reply, false));
  SKEIN_TRY(r.string("thinking", &rule.thinking, false));
  SKEIN_TRY(r.string("error", &rule.error, false));
  SKEIN_TRY(r.boolean("stall", &rule.stall, false));
  SKEIN_TRY(r.boolean("resume_fails", &rule.resume_fails, false));
  SKEIN_TRY(r.strings("deltas", &rule.deltas, false));
  SKEIN_TRY(r.number("cost_usd", &rule.cost_usd, false));
  if (r.has("latency_ms")) {
    uint64_t ms = 0;
    SKEIN_TRY(r.uint("latency_ms", &ms));
    rule.latency_ms = ms;
  }
  if (r.has("usage")) {
    json::dom::element u;
    SKEIN_TRY(r.element("usage", &u));
    json::object_reader ur;
    SKEIN_TRY(json::object_reader::open(u, r.name("usage"), &ur));
    token_usage usage;
    SKEIN_TRY(ur.uint("input_tokens", &usage.input_tokens, false));
    SKEIN_TRY(ur.uint("output_tokens", &usage.output_tokens, false));
    rule.usage = usage;
  }
  if (r.has("tool_calls")) {
    json::dom::element calls;
    SKEIN_TRY(r.element("tool_calls", &calls));
    json::dom::array arr;
    if (calls.get(arr) != simdjson::SUCCESS) return status::invalid_input(r.name("tool_calls") + ": expected an array");
    size_t i = 0;
    for (json::dom::element c : arr) {
      json::object_reader cr;
      SKEIN_TRY(json::object_reader::open(c, r.name("tool_calls") + "[" + std::to_string(i++) + "]", &cr));
      requested_tool_call call;
      SKEIN_TRY(cr.string("name", &call.name));
      SKEIN_TRY(cr.string("id", &call.call_id, false));
      if (cr.has("arguments")) SKEIN_TRY(cr.raw("arguments", json::dom::element_type::OBJECT, &call.arguments_json));
      rule.tool_calls.push_back(std::move(call));
    }
  }
  *out = std::move(rule);
  return status::ok();
}

const event* last_user_message(const event_list& conversation) {
  for (auto it = conversation.rbegin(); it != conversation.rend(); ++it)
    if (it->type == event_type::message && it->role == message_role::user) return &*it;
  return nullptr;
}

class scripted_engine final : public engine {
 public:
  scripted_engine(std::vector<scripted_rule> rules, std::optional<scripted_rule> fallback,
                  uint64_t latency_ms, timer_service& timers, std::optional<scripted_rule> title)
      : rules_(std::move(rules)), fallback_(std::move(fallback)), latency_ms_(latency_ms), timers_(timers),
        title_(std::move(title)) {}

  std::unique_ptr<call_handle> start(engine_request req, engine_callbacks cb) override {
    if (req.purpose == engine_purpose::summary) return start_summary(req, std::move(cb));
    if (req.purpose == engine_purpose::title) return start_title(req, std::move(cb));
    const event* input = last_user_message(req.conversation);
    std::string text = input != nullptr ? input->text : std::string{};
    const scripted_rule* rule = pick(text, req.turn);
    // The handle and the pending timers share the flag: cancel() silences both.
    auto cancelled = std::make_shared<std::atomic<bool>>(false);
    auto handle = std::make_unique<cancel_handle>(cancelled);

    engine_reply reply = make_reply(rule, req, text);
    if (rule != nullptr && rule->stall) return handle;
    uint64_t latency = rule != nullptr && rule->latency_ms ? *rule->latency_ms : latency_ms_;
    std::vector<std::string> deltas = rule != nullptr ? rule->deltas : std::vector<std::string>{};
    auto on_done = cb.on_done;
    auto deliver = [cancelled, on_done, reply]() {
      if (!cancelled->load()) on_done(reply);
    };
    if (latency == 0 && deltas.empty()) {
      deliver();
      return handle;
    }
    for (size_t i = 0; i < deltas.size(); ++i) {
      auto at = std::chrono::milliseconds(latency * (i + 1) / (deltas.size() + 1));
      auto on_delta = cb.on_delta;
      timers_.after(at, [cancelled, on_delta, d = deltas[i]]() {
        if (!cancelled->load() && on_delta) on_delta(d);
      });
    }
    timers_.after(std::chrono::milliseconds(latency), deliver);
    return handle;
  }

 private:
  // A compaction's summary (purpose summary): the `summary` rule's reply, error,
  // stall and latency, or the deterministic default_summary().
  std::unique_ptr<call_handle> start_summary(const engine_request& req, engine_callbacks cb) {
    auto cancelled = std::make_shared<std::atomic<bool>>(false);
    auto handle = std::make_unique<cancel_handle>(cancelled);
    const scripted_rule* rule = summary_ ? &*summary_ : nullptr;
    if (rule != nullptr && rule->stall) return handle;
    engine_reply reply;
    if (rule != nullptr && !rule->error.empty()) reply.result = status::io_error(rule->error);
    else if (rule != nullptr && rule->has_reply) reply.step.text = rule->reply;
    else reply.step.text = default_summary(req.conversation);
    reply.step.usage.input_tokens = 1;
    reply.step.usage.output_tokens = reply.step.text.size() / 4 + 1;
    deliver_after(rule, cancelled, cb.on_done, std::move(reply));
    return handle;
  }

 public:
  // "(scripted summary of N events) " then the first bytes of each user
  // message, at most summary_bytes_max in all: deterministic, and short.
  static std::string default_summary(const event_list& conversation) {
    constexpr size_t message_bytes_max = 40;
    constexpr size_t summary_bytes_max = 1024;
    std::string out = "(scripted summary of " + std::to_string(conversation.size()) + " events)";
    for (const auto& e : conversation) {
      if (e.type != event_type::message || e.role != message_role::user) continue;
      std::string part = e.text.substr(0, message_bytes_max);
      // Never end inside a UTF-8 character.
      while (!part.empty() && (static_cast<unsigned char>(part.back()) & 0xC0) == 0x80) part.pop_back();
      if (!part.empty() && (static_cast<unsigned char>(part.back()) & 0xC0) == 0xC0) part.pop_back();
      if (out.size() + part.size() + 3 > summary_bytes_max) break;
      out += " | " + part;
    }
    return out;
  }

  std::optional<scripted_rule> summary_;

 private:
  class cancel_handle final : public call_handle {
   public:
    explicit cancel_handle(std::shared_ptr<std::atomic<bool>> flag) : flag_(std::move(flag)) {}
    void cancel() override { flag_->store(true); }

   private:
    std::shared_ptr<std::atomic<bool>> flag_;
  };

  const scripted_rule* pick(const std::string& input, uint32_t turn) const {
    // libstdc++'s regex recurses per character matched: over a client's 1 MiB
    // input a pattern such as ".*x" would overflow the stack. Rules see a prefix.
    std::string_view seen{input.data(), std::min(input.size(), scripted_match_bytes_max)};
    for (const auto& r : rules_) {
      if (r.turn && *r.turn != turn) continue;
      if (r.match && !std::regex_search(seen.begin(), seen.end(), *r.match)) continue;
      return &r;
    }
    return fallback_ ? &*fallback_ : nullptr;
  }

  // "{tool_result}" in a reply becomes the text of the conversation's last tool
  // result: a delegating agent passes its child's answer on.
  static std::string with_tool_result(std::string text, const event_list& conversation) {
    static constexpr std::string_view mark = "{tool_result}";
    size_t at = text.find(mark);
    if (at == std::string::npos) return text;
    std::string last;
    for (auto it = conversation.rbegin(); it != conversation.rend(); ++it)
      if (it->type == event_type::tool_result) {
        last = it->text;
        break;
      }
    for (; at != std::string::npos; at = text.find(mark, at + last.size())) text.replace(at, mark.size(), last);
    return text;
  }

  static engine_reply make_reply(const scripted_rule* rule, const engine_request& req, const std::string& input) {
    engine_reply reply;
    if (rule != nullptr && rule->resume_fails && !req.session_id.empty()) {
      reply.result = status::io_error("scripted: cannot resume session " + req.session_id);
      reply.resume_failed = true;
      return reply;
    }
    if (rule != nullptr && !rule->error.empty()) {
      reply.result = status::io_error(rule->error);
      return reply;
    }
    engine_step& step = reply.step;
    // A step that calls tools says nothing unless the rule gives it words.
    bool calls = rule != nullptr && !rule->tool_calls.empty();
    if (rule != nullptr && rule->has_reply) step.text = with_tool_result(rule->reply, req.conversation);
    else if (!calls) step.text = "(scripted) " + input;
    if (rule != nullptr) {
      step.thinking = rule->thinking;
      step.tool_calls = rule->tool_calls;
      step.cost_usd = rule->cost_usd;
    }
    if (rule != nullptr && rule->usage) {
      step.usage = *rule->usage;
    } else {
      // The text and json bytes of the whole conversation, kept by the list: O(1).
      step.usage.input_tokens = req.conversation.payload_bytes() / 4 + 1;
      step.usage.output_tokens = step.text.size() / 4 + 1;
    }
    step.session_id = req.session_id.empty() ? "scripted-" + req.thread_id : req.session_id;
    return reply;
  }

  // A title call (purpose title): the `title` rule, or the first words of the
  // first user message. "{n}" in the rule's reply becomes this engine's title
  // call count (from 1): a test can tell one generation from another.
  std::unique_ptr<call_handle> start_title(const engine_request& req, engine_callbacks cb) {
    uint64_t n = title_calls_.fetch_add(1) + 1;
    auto cancelled = std::make_shared<std::atomic<bool>>(false);
    auto handle = std::make_unique<cancel_handle>(cancelled);
    engine_reply reply;
    const scripted_rule* rule = title_ ? &*title_ : nullptr;
    if (rule != nullptr && rule->stall) return handle;
    if (rule != nullptr && !rule->error.empty()) {
      reply.result = status::io_error(rule->error);
    } else if (rule != nullptr && rule->has_reply) {
      reply.step.text = rule->reply;
      for (size_t at = reply.step.text.find("{n}"); at != std::string::npos; at = reply.step.text.find("{n}", at))
        reply.step.text.replace(at, 3, std::to_string(n));
    } else {
      for (const auto& e : req.conversation)
        if (e.type == event_type::message && e.role == message_role::user) {
          reply.step.text = e.text.substr(0, 200);
          break;
        }
    }
    deliver_after(rule, cancelled, cb.on_done, std::move(reply));
    return handle;
  }

  // A one-piece reply (a summary, a title): `on_done` hears it after the rule's
  // latency (else the engine's), at once for none, never once `cancelled`.
  void deliver_after(const scripted_rule* rule, std::shared_ptr<std::atomic<bool>> cancelled,
                     std::function<void(engine_reply)> on_done, engine_reply reply) {
    uint64_t latency = rule != nullptr && rule->latency_ms ? *rule->latency_ms : latency_ms_;
    auto deliver = [cancelled, on_done = std::move(on_done), reply = std::move(reply)]() {
      if (!cancelled->load()) on_done(reply);
    };
    if (latency == 0) deliver();
    else timers_.after(std::chrono::milliseconds(latency), deliver);
  }

  std::vector<scripted_rule> rules_;
  std::optional<scripted_rule> fallback_;
  uint64_t latency_ms_;
  timer_service& timers_;
  std::optional<scripted_rule> title_;
  std::atomic<uint64_t> title_calls_{0};
};

// "summary": the rule answering compaction summaries (match and turn unused).
status parse_summary_rule(const json::object_reader& r, std::optional<scripted_rule>* out) {
  if (!r.has("summary")) return status::ok();
  json::dom::element el;
  SKEIN_TRY(r.element("summary", &el));
  scripted_rule rule;
  SKEIN_TRY(parse_rule(el, "engine_config.summary", false, &rule));
  *out = std::move(rule);
  return status::ok();
}

}  // namespace

status make_scripted_engine(std::string_view config_json, timer_service& timers,
                            std::shared_ptr<engine>* out) {
  json::document doc;
  json::object_reader r;
  SKEIN_TRY(json::parse_object(config_json.empty() ? "{}" : config_json, json_limits{}, "engine_config", &doc, &r));
  uint64_t latency = 0;
  SKEIN_TRY(r.uint("latency_ms", &latency, false));
  std::vector<scripted_rule> rules;
  if (r.has("rules")) {
    json::dom::element el;
    SKEIN_TRY(r.element("rules", &el));
    json::dom::array arr;
    if (el.get(arr) != simdjson::SUCCESS) return status::invalid_input("engine_config.rules: expected an array");
    for (json::dom::element rule_el : arr) {
      scripted_rule rule;
      SKEIN_TRY(parse_rule(rule_el, "engine_config.rules[" + std::to_string(rules.size()) + "]", true, &rule));
      rules.push_back(std::move(rule));
    }
  }
  std::optional<scripted_rule> fallback;
  if (r.has("default")) {
    json::dom::element el;
    SKEIN_TRY(r.element("default", &el));
    scripted_rule rule;
    SKEIN_TRY(parse_rule(el, "engine_config.default", false, &rule));
    fallback = std::move(rule);
  }
  std::optional<scripted_rule> title;
  if (r.has("title")) {
    json::dom::element el;
    SKEIN_TRY(r.element("title", &el));
    scripted_rule rule;
    SKEIN_TRY(parse_rule(el, "engine_config.title", false, &rule));
    title = std::move(rule);
  }
  auto engine = std::make_shared<scripted_engine>(std::move(rules), std::move(fallback), latency, timers,
                                                  std::move(title));
  SKEIN_TRY(parse_summary_rule(r, &engine->summary_));
  *out = std::move(engine);
  return status::ok();
}

}  // namespace skein
