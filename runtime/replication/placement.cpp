// placement.hpp: partitions and rendezvous order over the stable hash.
#include "runtime/replication/placement.hpp"

#include <algorithm>

#include "runtime/model/stable_hash.hpp"

namespace skein::replication {

uint32_t partition_of(std::string_view ns, std::string_view root_id, uint32_t partitions) {
  std::string key;
  key.reserve(ns.size() + 1 + root_id.size());
  key.append(ns);
  key.push_back('\0');  // ("ab", "c") and ("a", "bc") differ
  key.append(root_id);
  return static_cast<uint32_t>(stable_hash(key) % partitions);
}

uint64_t rendezvous_score(uint32_t partition, std::string_view member) {
  return mix64(stable_hash(member) ^ mix64(0x9e3779b97f4a7c15ULL * (uint64_t{partition} + 1)));
}

std::vector<std::string> replicas_of(uint32_t partition, const std::vector<std::string>& members, size_t replicas) {
  std::vector<std::pair<uint64_t, const std::string*>> scored;
  scored.reserve(members.size());
  for (const auto& m : members) scored.emplace_back(rendezvous_score(partition, m), &m);
  // Ties (never seen with 64-bit scores, but possible) break by id, so every node agrees.
  std::sort(scored.begin(), scored.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : *a.second < *b.second;
  });
  std::vector<std::string> out;
  for (size_t i = 0; i < scored.size() && out.size() < replicas; ++i)
    if (out.empty() || out.back() != *scored[i].second) out.push_back(*scored[i].second);  // a repeated id counts once
  return out;
}

}  // namespace skein::replication
