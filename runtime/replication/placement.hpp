// placement: where a thread's partition lives in a replicated cluster.
//
// A cluster has a fixed number of partitions P, chosen when it is created. A
// thread belongs to partition partition_of(namespace, root id, P): children,
// schedules and an agent's work home follow their root. Each partition is
// placed on `replicas` of the live members by rendezvous (highest random
// weight) hashing: every member gets a score for the partition, and the
// highest scores hold it, the highest of all leading. So every node computes
// the same placement from the same member list with no coordination, and a
// member joining or leaving moves only the partitions whose top scores it
// enters or leaves.
//
// The hashes are part of the stored format: a partition number is in every
// replicated message's subject, so they never change between versions
// (runtime/model/stable_hash.hpp; the tests pin their values).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace skein::replication {

// The partition of a thread whose root is `root_id` in namespace `ns`, of `partitions` (> 0).
uint32_t partition_of(std::string_view ns, std::string_view root_id, uint32_t partitions);

// Member `member`'s rendezvous score for `partition`.
uint64_t rendezvous_score(uint32_t partition, std::string_view member);

// The members holding `partition`, highest score first (the leader, then its
// followers in the order they take over): min(replicas, members) of them.
// Members are node ids; their order in `members` does not matter.
std::vector<std::string> replicas_of(uint32_t partition, const std::vector<std::string>& members, size_t replicas);

}  // namespace skein::replication
