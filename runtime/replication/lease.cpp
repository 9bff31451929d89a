// lease.hpp: taking, renewing and releasing a partition's lease by
// compare-and-set, lapses judged on this keeper's monotonic clock.
#include "runtime/replication/lease.hpp"

#include <charconv>

namespace skein::replication {

bool lease_keeper::decode(const std::string& value, lease* out) {
  auto space = value.find(' ');
  if (space == std::string::npos) return false;
  uint64_t epoch = 0;
  auto [end, ec] = std::from_chars(value.data(), value.data() + space, epoch);
  if (ec != std::errc{} || end != value.data() + space) return false;
  out->epoch = epoch;
  out->holder = value.substr(space + 1);
  return true;
}

status lease_keeper::try_take(uint32_t partition, clock::time_point now, lease* out) {
  const std::string k = key(partition);
  kv_entry e;
  status s = js_.kv_get(bucket_, k, &e);
  if (s.code() == errc::not_found) {
    lease mine{node_, 1, 0};
    s = js_.kv_create(bucket_, k, encode(mine), &mine.revision);
    if (s.code() == errc::conflict) return status::ok();  // another node was first
    SKEIN_TRY(s);
    *out = mine;
    seen_[partition] = {mine.revision, now};
    taken_.insert(partition);
    return status::ok();
  }
  SKEIN_TRY(s);
  lease current;
  if (!decode(e.value, &current)) return status::corruption("lease " + k + ": \"" + e.value.substr(0, 64) + "\"");
  current.revision = e.revision;
  *out = current;
  auto& sight = seen_[partition];
  if (sight.revision != e.revision) sight = {e.revision, now};  // renewed (or first seen): the clock starts again
  // A lease naming this node that this keeper did not take is a former
  // incarnation's (a restart): taken again at once, at the next epoch, so
  // that the new writer's message ids are never the old one's.
  const bool mine_before = current.holder == node_ && !taken_.count(partition);
  bool lapsed = current.holder.empty() || now - sight.since >= ttl_ || mine_before;
  if (current.holder == node_ && !mine_before) {
    // Read as this node's: confirmed by a write at the revision read, never
    // by the read alone (a lagging replica may answer a read with a lease
    // long since taken by another).
    lease mine = current;
    s = js_.kv_update(bucket_, k, encode(mine), e.revision, &mine.revision);
    if (s.code() == errc::conflict) {
      *out = lease{};  // not this node's after all; who holds it is read next time
      return status::ok();
    }
    SKEIN_TRY(s);
    *out = mine;
    sight = {mine.revision, now};
    return status::ok();
  }
  if (!lapsed) return status::ok();
  lease mine{node_, current.epoch + 1, 0};
  s = js_.kv_update(bucket_, k, encode(mine), e.revision, &mine.revision);
  if (s.code() == errc::conflict) return status::ok();  // renewed or taken meanwhile
  SKEIN_TRY(s);
  *out = mine;
  sight = {mine.revision, now};
  taken_.insert(partition);
  return status::ok();
}

status lease_keeper::renew(uint32_t partition, lease* held) {
  lease next = *held;
  SKEIN_TRY(js_.kv_update(bucket_, key(partition), encode(next), held->revision, &next.revision));
  *held = next;
  return status::ok();
}

status lease_keeper::release(uint32_t partition, const lease& held) {
  taken_.erase(partition);
  lease free{"", held.epoch, 0};
  return js_.kv_update(bucket_, key(partition), encode(free), held.revision, nullptr);
}

}  // namespace skein::replication
