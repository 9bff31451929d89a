#include "runtime/model/work.hpp"

#include <algorithm>
#include <array>
#include <cassert>
#include <cmath>

#include "runtime/model/text.hpp"
#include "runtime/model/work_api.hpp"

namespace skein {
namespace {

constexpr double day_ms = 24.0 * 3600 * 1000;
constexpr double active_above = 0.5;
constexpr double dormant_below = 0.2;

constexpr std::array<std::string_view, 8> operational_words = {"deploy", "fix",      "debug",    "hotfix",
                                                              "urgent", "broken",   "incident", "blocker"};

char lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }
bool is_word_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         (static_cast<unsigned char>(c) >= 0x80);  // a letter of another script is part of a word
}
bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }
bool is_ascii_punct(char c) {
  return (c >= '!' && c <= '/') || (c >= ':' && c <= '@') || (c >= '[' && c <= '`') || (c >= '{' && c <= '~');
}

double vitality_at(const work_item& w, int64_t at_ms, double* recency, double* frequency) {
  double half_life = w.cls == work_class::operational ? work_half_life_operational_days : work_half_life_backlog_days;
  double since_touch = std::max<double>(0, static_cast<double>(at_ms - w.last_touched_at_ms)) / day_ms;
  double alive = std::max(1.0, static_cast<double>(at_ms - w.created_at_ms) / day_ms);
  *recency = std::exp(-std::log(2.0) * since_touch / half_life);
  *frequency = std::min(std::log(static_cast<double>(w.touch_count) + 1) / std::log(alive + 1), 1.0);
  return 0.55 * *recency + 0.45 * *frequency;
}

double vitality_at(const work_item& w, int64_t at_ms) {
  double r = 0, f = 0;
  return vitality_at(w, at_ms, &r, &f);
}

// The first ms at or after `from_ms` (and at most `to_ms`) when vitality is below
// the dormant threshold. Between touches vitality only falls (recency decays,
// days_alive grows), so bisection finds it.
int64_t dormancy_crossing(const work_item& w, int64_t from_ms, int64_t to_ms) {
  if (vitality_at(w, from_ms) < dormant_below) return from_ms;
  int64_t lo = from_ms, hi = to_ms;  // invariant: v(lo) >= threshold, v(hi) < threshold
  assert(vitality_at(w, hi) < dormant_below);  // the caller saw it dormant at to_ms
  while (hi - lo > 1) {
    int64_t mid = lo + (hi - lo) / 2;
    if (vitality_at(w, mid) < dormant_below) hi = mid;
    else lo = mid;
  }
  return hi;
}

}  // namespace

std::string_view to_string(work_status s) {
  switch (s) {
    case work_status::open: return "open";
    case work_status::resolved: return "resolved";
    case work_status::archived: return "archived";
  }
  return "open";
}

std::optional<work_status> parse_work_status(std::string_view name) {
  for (auto s : {work_status::open, work_status::resolved, work_status::archived})
    if (to_string(s) == name) return s;
  return std::nullopt;
}

std::string_view to_string(work_class c) { return c == work_class::operational ? "operational" : "backlog"; }

std::optional<work_class> parse_work_class(std::string_view name) {
  if (name == "operational") return work_class::operational;
  if (name == "backlog") return work_class::backlog;
  return std::nullopt;
}

std::string_view to_string(work_stage s) {
  switch (s) {
    case work_stage::emerging: return "emerging";
    case work_stage::active: return "active";
    case work_stage::cooling: return "cooling";
    case work_stage::dormant: return "dormant";
    case work_stage::archived: return "archived";
    case work_stage::resolved: return "resolved";
  }
  return "emerging";
}

std::optional<work_stage> parse_work_stage(std::string_view name) {
  for (auto s : {work_stage::emerging, work_stage::active, work_stage::cooling, work_stage::dormant,
                 work_stage::archived, work_stage::resolved})
    if (to_string(s) == name) return s;
  return std::nullopt;
}

work_class classify_work(std::string_view text) {
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && !is_word_char(text[i])) ++i;
    size_t start = i;
    while (i < text.size() && is_word_char(text[i])) ++i;
    if (i == start) continue;
    std::string word;
    word.reserve(i - start);
    for (size_t k = start; k < i; ++k) word.push_back(lower(text[k]));
    for (auto w : operational_words)
      if (word == w) return work_class::operational;
  }
  return work_class::backlog;
}

bool is_project_state(std::string_view text) {
  size_t i = 0;
  while (i < text.size() && is_space(text[i])) ++i;
  text.remove_prefix(i);
  if (text.size() < work_project_state_prefix.size()) return false;
  for (size_t k = 0; k < work_project_state_prefix.size(); ++k)
    if (lower(text[k]) != lower(work_project_state_prefix[k])) return false;
  return true;
}

std::string normalize_work_text(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  bool pending_space = false;
  for (char c : text) {
    if (is_ascii_punct(c)) continue;
    if (is_space(c)) {
      pending_space = !out.empty();
      continue;
    }
    if (pending_space) out.push_back(' ');
    pending_space = false;
    out.push_back(lower(c));
  }
  return out;
}

work_vitality assess_work(const work_item& w, int64_t now_ms) {
  work_vitality v;
  v.vitality = vitality_at(w, now_ms, &v.recency, &v.frequency);
  if (w.status == work_status::resolved) {
    v.stage = work_stage::resolved;
    return v;
  }
  if (w.status == work_status::archived) {
    v.stage = work_stage::archived;
    v.dormant_since_ms = w.dormant_since_ms;
    return v;
  }
  if (now_ms - w.created_at_ms < work_emerging_ms) {
    v.stage = work_stage::emerging;
    return v;
  }
  if (v.vitality > active_above) {
    v.stage = work_stage::active;
    return v;
  }
  if (v.vitality >= dormant_below) {
    v.stage = work_stage::cooling;
    return v;
  }
  // Dormant by the clock: since the recorded moment, else since the computed one
  // (not before the item stopped emerging, nor before its last touch).
  int64_t since = w.dormant_since_ms;
  if (since == 0)
    since = dormancy_crossing(w, std::max(w.last_touched_at_ms, w.created_at_ms + work_emerging_ms), now_ms);
  v.dormant_since_ms = since;
  v.stage = now_ms - since >= work_archive_after_dormant_ms ? work_stage::archived : work_stage::dormant;
  return v;
}

status validate_work_text(std::string_view text, std::string_view field) {
  std::string name{field};
  if (text.empty()) return status::invalid_input(name + ": empty").with_field(name);
  if (text.size() > work_text_bytes_max)
    return status::invalid_input(name + ": " + std::to_string(text.size()) + " bytes, more than work_text_bytes_max (" +
                                 std::to_string(work_text_bytes_max) + ")")
        .with_field(name)
        .with_limit("work_text_bytes_max");
  if (to_valid_utf8(text) != text) return status::invalid_input(name + ": not valid UTF-8").with_field(name);
  if (std::all_of(text.begin(), text.end(), is_space))
    return status::invalid_input(name + ": blank").with_field(name);
  return status::ok();
}

status validate_work_project(std::string_view project, std::string_view field) {
  std::string name{field};
  if (project.empty()) return status::invalid_input(name + ": empty").with_field(name);
  if (project.size() > work_project_bytes_max)
    return status::invalid_input(name + ": " + std::to_string(project.size()) +
                                 " bytes, more than work_project_bytes_max (" + std::to_string(work_project_bytes_max) +
                                 ")")
        .with_field(name)
        .with_limit("work_project_bytes_max");
  if (to_valid_utf8(project) != project) return status::invalid_input(name + ": not valid UTF-8").with_field(name);
  auto control = [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; };
  if (std::any_of(project.begin(), project.end(), control))
    return status::invalid_input(name + ": control characters are not allowed").with_field(name);
  return status::ok();
}

}  // namespace skein

namespace skein {

std::string_view to_string(suggestion_status s) {
  switch (s) {
    case suggestion_status::pending: return "pending";
    case suggestion_status::promoted: return "promoted";
    case suggestion_status::dismissed: return "dismissed";
    case suggestion_status::suppressed: return "suppressed";
  }
  return "pending";
}

}  // namespace skein
