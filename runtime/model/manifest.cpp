#include "runtime/model/manifest.hpp"

#include <array>
#include <set>

#include "runtime/model/ids.hpp"

namespace skein {
namespace {

constexpr std::array<std::string_view, thread_status_count> status_names = {
    "open", "idle", "running", "completed", "failed", "cancelled"};
constexpr std::array<std::string_view, 5> parent_kind_names = {"none", "thread", "task",
                                                                "schedule", "agent"};
constexpr std::array<std::string_view, 2> trigger_names = {"always", "on_mention"};

bool id_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '.' || c == ':' || c == '-';
}

}  // namespace

std::string_view to_string(thread_status s) { return status_names[static_cast<size_t>(s)]; }

std::optional<thread_status> parse_thread_status(std::string_view name) {
  for (size_t i = 0; i < status_names.size(); ++i)
    if (status_names[i] == name) return static_cast<thread_status>(i);
  return std::nullopt;
}

std::string_view thread_stage(thread_status status, std::optional<run_outcome> last_outcome, bool stale) {
  if (status == thread_status::running) return stale ? "stalled" : "running";
  // A status that carries an outcome (a bound thread, or one closed from the
  // log) says it even when the manifest predates last_outcome.
  if (status == thread_status::failed || last_outcome == run_outcome::failed) return "failed";
  if (status == thread_status::cancelled || last_outcome == run_outcome::cancelled) return "cancelled";
  return "idle";
}

std::string_view to_string(parent_kind k) { return parent_kind_names[static_cast<size_t>(k)]; }

std::optional<parent_kind> parse_parent_kind(std::string_view name) {
  for (size_t i = 0; i < parent_kind_names.size(); ++i)
    if (parent_kind_names[i] == name) return static_cast<parent_kind>(i);
  return std::nullopt;
}

std::string_view to_string(member_trigger t) { return trigger_names[static_cast<size_t>(t)]; }

std::optional<member_trigger> parse_member_trigger(std::string_view name) {
  for (size_t i = 0; i < trigger_names.size(); ++i)
    if (trigger_names[i] == name) return static_cast<member_trigger>(i);
  return std::nullopt;
}

status validate_members(const std::vector<house_member>& members, std::string_view field) {
  std::string name{field};
  if (members.size() > house_members_max)
    return status::invalid_input(name + ": " + std::to_string(members.size()) + " members exceed house_members_max (" +
                                 std::to_string(house_members_max) + ")")
        .with_limit("house_members_max")
        .with_field(name);
  std::set<std::string_view> seen;
  for (const auto& m : members) {
    SKEIN_TRY(validate_id(m.agent_id, name + ".agent"));
    if (!seen.insert(m.agent_id).second)
      return status::invalid_input(name + ": agent " + m.agent_id + " is a member twice").with_field(name);
  }
  return status::ok();
}

bool mentions(std::string_view text, std::string_view agent_id) {
  if (agent_id.empty()) return false;
  for (size_t at = text.find('@'); at != std::string_view::npos; at = text.find('@', at + 1)) {
    std::string_view rest = text.substr(at + 1);
    if (!rest.starts_with(agent_id)) continue;
    // "@bob" mentions bob, "@bobby" does not; a trailing '.' or ':' ends a sentence,
    // not the id, when nothing id-like follows it.
    size_t end = agent_id.size();
    while (end < rest.size() && (rest[end] == '.' || rest[end] == ':') &&
           (end + 1 == rest.size() || !id_char(rest[end + 1])))
      ++end;
    if (end == agent_id.size() ? (end == rest.size() || !id_char(rest[end])) : true) return true;
  }
  return false;
}

std::vector<std::string> triggered_members(const std::vector<house_member>& members, std::string_view text) {
  std::vector<std::string> out;
  for (const auto& m : members)
    if (m.trigger == member_trigger::always || mentions(text, m.agent_id)) out.push_back(m.agent_id);
  return out;
}

}  // namespace skein
