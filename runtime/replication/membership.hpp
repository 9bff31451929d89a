// membership: which nodes of a replicated cluster are alive, as one observer
// judges it.
//
// Each node registers itself as a key of the members bucket (its id: its
// address and version as the value) and renews it, by putting it again, every
// member_ttl / 3. An observer watches the bucket and hands each entry it sees
// to observe(), with the time it saw it on its own monotonic clock. A member
// is alive while the observer has seen a new revision of its key within
// member_ttl; a deleted key (a node that left) is gone at once. No wall-clock
// time is compared, and no node's clock is read by another: a member whose
// renewals stop is judged gone member_ttl after the last renewal this observer
// saw, whatever the clocks say.
//
// Not thread-safe: one owner (the node's membership actor) feeds it.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace skein::replication {

struct member {
  std::string id;
  std::string value;  // what the node registered (its address and version)
  uint64_t revision = 0;
};

class membership_view {
 public:
  using clock = std::chrono::steady_clock;

  explicit membership_view(std::chrono::milliseconds member_ttl) : ttl_(member_ttl) {}

  // The entry of key `id` at `revision` seen at `now`; `deleted` for a delete
  // marker. A revision not newer than the last one seen renews nothing.
  void observe(const std::string& id, const std::string& value, uint64_t revision, bool deleted, clock::time_point now);

  // The members alive at `now`, by id.
  std::vector<member> alive(clock::time_point now) const;
  std::vector<std::string> alive_ids(clock::time_point now) const;

  // When the next member would lapse if nothing is renewed (time_point::max() when none is alive):
  // the owner arms its timer for it.
  clock::time_point next_change(clock::time_point now) const;

 private:
  struct seen {
    member m;
    clock::time_point renewed;
  };
  std::chrono::milliseconds ttl_;
  std::map<std::string, seen> members_;
};

}  // namespace skein::replication
