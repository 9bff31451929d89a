// The titles effect (DESIGN §4): an untitled thread with 2+ user messages gets a
// 3-6 word title from its agent's engine, in a one-off call outside any run
// (purpose title, no tools, the working conversation). The title goes to the
// thread actor as a patch with the effect's cursor; a thread that has a title,
// too few user messages, or an agent with titles off only moves the cursor.
#include <algorithm>

#include "actors/effects/effects.hpp"
#include "persistence/event_log.hpp"
#include "runtime/model/conversation.hpp"
#include "runtime/model/text.hpp"

namespace skein {
namespace {

constexpr size_t title_user_messages_min = 2;

size_t user_messages(const std::vector<event>& log) {
  return static_cast<size_t>(std::count_if(log.begin(), log.end(), [](const event& e) {
    return e.type == event_type::message && e.role == message_role::user;
  }));
}

// The first user message's first words: the title when the engine gives none.
std::string fallback_title(const std::vector<event>& conversation) {
  for (const auto& e : conversation)
    if (e.type == event_type::message && e.role == message_role::user) return sanitize_title(e.text);
  return {};
}

class titles_effect final : public effect_kind {
 public:
  std::string name() const override { return "titles"; }

  status load(const event_log& log, effect_job& job) const override {
    job.events.clear();
    if (!job.agent->config.effects.titles || !job.thread.title.empty()) return status::ok();
    // Read whole, but only while the thread is untitled: once titled it is never read again.
    std::vector<event> all;
    SKEIN_TRY(log.read_events(job.thread_id, 1, 0, &all));
    if (!all.empty()) job.target = std::min(job.target, all.back().seq);
    if (user_messages(all) < title_user_messages_min) return status::ok();
    job.events = working_conversation(all);
    // From the whole log: after a compaction the view's first user message may
    // be inside the compaction's events, or gone into its summary.
    job.hint = fallback_title(all);
    return status::ok();
  }

  std::unique_ptr<call_handle> process(effect_job job, std::function<void(effect_result)> done) const override {
    effect_result r;
    r.write.cursor = job.target;
    if (job.events.empty()) {  // nothing to title: the cursor moves on
      done(std::move(r));
      return nullptr;
    }
    if (!job.agent->engine) {
      r.result = status::not_found("agent " + job.agent->config.id + " has no engine");
      done(std::move(r));
      return nullptr;
    }
    engine_request req;
    req.purpose = engine_purpose::title;
    req.thread_id = job.thread_id;
    req.conversation = job.events;
    std::string fallback = job.hint;
    engine_callbacks cb;
    cb.on_done = [r, fallback, done](engine_reply reply) mutable {
      if (!reply.result) {
        r.result = reply.result;
      } else {
        std::string title = sanitize_title(reply.step.text);
        // Neither the engine nor the messages give a word (empty inputs): the
        // thread stays untitled and the cursor moves on — retrying would not help.
        if (title.empty()) title = fallback;
        if (!title.empty()) r.title = std::move(title);
      }
      done(std::move(r));
    };
    return job.agent->engine->start(std::move(req), std::move(cb));
  }
};

// Control characters separate words too: a title is one plain line.
bool is_space(char c) { return static_cast<unsigned char>(c) <= 0x20 || c == 0x7f; }

bool is_quote(std::string_view s, size_t i, size_t* len) {
  static constexpr std::string_view quotes[] = {"\"", "'", "`", "\xE2\x80\x9C", "\xE2\x80\x9D", "\xE2\x80\x98",
                                                "\xE2\x80\x99", "\xC2\xAB", "\xC2\xBB"};
  for (auto q : quotes)
    if (s.substr(i, q.size()) == q) {
      *len = q.size();
      return true;
    }
  return false;
}

}  // namespace

std::string sanitize_title(std::string_view raw) {
  // One line: the first non-empty one (engines like to add explanations after).
  std::string text = to_valid_utf8(raw);
  std::vector<std::string> words;
  size_t i = 0;
  bool line_seen = false;
  while (i < text.size() && words.size() < generated_title_words_max) {
    if (text[i] == '\n' && line_seen) break;
    if (is_space(text[i])) {
      ++i;
      continue;
    }
    std::string word;
    while (i < text.size() && !is_space(text[i])) {
      size_t q = 0;
      if (is_quote(text, i, &q)) {
        i += q;
        continue;
      }
      word.push_back(text[i++]);
    }
    if (word.empty()) continue;
    line_seen = true;
    words.push_back(std::move(word));
  }
  std::string out;
  for (const auto& w : words) {
    size_t need = out.empty() ? w.size() : w.size() + 1;
    if (out.size() + need > generated_title_bytes_max) break;
    if (!out.empty()) out.push_back(' ');
    out += w;
  }
  // A first word alone past the byte limit is cut at a character boundary.
  if (out.empty() && !words.empty()) {
    out = words.front().substr(0, generated_title_bytes_max);
    while (!out.empty() && (static_cast<unsigned char>(out.back()) & 0xC0) == 0x80) out.pop_back();
    if (!out.empty() && (static_cast<unsigned char>(out.back()) & 0x80)) out.pop_back();
  }
  return out;
}

std::shared_ptr<const effect_kind> make_titles_effect() { return std::make_shared<titles_effect>(); }

}  // namespace skein
