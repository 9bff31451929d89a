// membership.hpp: renewals judged on the observer's monotonic clock.
#include "runtime/replication/membership.hpp"

namespace skein::replication {

void membership_view::observe(const std::string& id, const std::string& value, uint64_t revision, bool deleted,
                              clock::time_point now) {
  auto it = members_.find(id);
  if (it != members_.end() && revision <= it->second.m.revision) return;  // old news
  if (deleted) {
    // Remember the revision, so an older put that arrives late renews nothing.
    members_[id] = {member{id, "", revision}, clock::time_point::min()};
    return;
  }
  members_[id] = {member{id, value, revision}, now};
}

std::vector<member> membership_view::alive(clock::time_point now) const {
  std::vector<member> out;
  for (const auto& [id, s] : members_)
    if (s.renewed != clock::time_point::min() && now - s.renewed < ttl_) out.push_back(s.m);
  return out;
}

std::vector<std::string> membership_view::alive_ids(clock::time_point now) const {
  std::vector<std::string> out;
  for (const auto& m : alive(now)) out.push_back(m.id);
  return out;
}

membership_view::clock::time_point membership_view::next_change(clock::time_point now) const {
  auto next = clock::time_point::max();
  for (const auto& [id, s] : members_)
    if (s.renewed != clock::time_point::min() && now - s.renewed < ttl_) next = std::min(next, s.renewed + ttl_);
  return next;
}

}  // namespace skein::replication
