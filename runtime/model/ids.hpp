// Thread, agent and run identifiers.
//
// Every id that enters skein — minted here, imported, or sent by a client — passes
// validate_id(): 1..128 characters of [A-Za-z0-9_.:-], no "..", not starting with
// '.'. Keys in RocksDB rely on this charset (no 0x00, no '/'). Pure functions;
// new_thread_id() uses a thread-local random source and is safe from any thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "runtime/model/status.hpp"

namespace skein {

inline constexpr size_t id_bytes_max = 128;

// `field` names the input in the error ("thread id", "agent_id", ...).
status validate_id(std::string_view id, std::string_view field);

// A namespace name (runtime/namespaces/namespaces.hpp): 1..namespace_name_bytes_max
// characters of [a-z0-9_-], starting with a letter or a digit — also a directory name.
inline constexpr size_t namespace_name_bytes_max = 64;
inline constexpr std::string_view default_namespace = "default";
status validate_namespace(std::string_view name, std::string_view field = "namespace");

// "th_YYYYMMDD_" + 12 random base32 characters (60 bits), for the UTC day of now_ms.
std::string new_thread_id(int64_t now_ms);
// Deterministic form for tests: the low 60 bits of `random_bits` pick the suffix.
std::string new_thread_id(int64_t now_ms, uint64_t random_bits);

// The n-th child of `parent`: "parent.n" (n >= 1).
std::string child_thread_id(std::string_view parent, uint64_t n);

// A run id: "run_" + 16 base32 characters.
std::string new_run_id();

// Milliseconds since the Unix epoch, from the system clock.
int64_t now_ms();

}  // namespace skein
