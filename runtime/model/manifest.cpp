#include "runtime/model/manifest.hpp"

#include <array>

namespace skein {
namespace {

constexpr std::array<std::string_view, thread_status_count> status_names = {
    "open", "idle", "running", "completed", "failed", "cancelled"};
constexpr std::array<std::string_view, 4> parent_kind_names = {"none", "thread", "task",
                                                                "schedule"};

}  // namespace

std::string_view to_string(thread_status s) { return status_names[static_cast<size_t>(s)]; }

std::optional<thread_status> parse_thread_status(std::string_view name) {
  for (size_t i = 0; i < status_names.size(); ++i)
    if (status_names[i] == name) return static_cast<thread_status>(i);
  return std::nullopt;
}

std::string_view to_string(parent_kind k) { return parent_kind_names[static_cast<size_t>(k)]; }

std::optional<parent_kind> parse_parent_kind(std::string_view name) {
  for (size_t i = 0; i < parent_kind_names.size(); ++i)
    if (parent_kind_names[i] == name) return static_cast<parent_kind>(i);
  return std::nullopt;
}

}  // namespace skein
