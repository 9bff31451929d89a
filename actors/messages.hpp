// The messages skein's actors exchange, and the values they carry.
//
// The interfaces, one per header: thread_protocol.hpp (thread actors),
// agent_protocol.hpp, directory.hpp, journal.hpp; the cluster edge's in
// runtime/cluster/cluster_link.hpp.
// The model values (events, manifests, run inputs and results, thread options,
// agents) have `inspect` overloads (actors/wire.hpp) and cross nodes; the rest
// below are local to one node (CAF_ALLOW_UNSAFE_MESSAGE_TYPE) and stay on the
// local side of the node edge (runtime/cluster/cluster_link.hpp).
#pragma once

#include <caf/allowed_unsafe_message_type.hpp>
#include <caf/atom.hpp>
#include <caf/fwd.hpp>
#include <chrono>
#include <functional>
#include <atomic>
#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "actors/wire.hpp"
#include "runtime/model/agent.hpp"
#include "runtime/model/compaction.hpp"
#include "runtime/model/embedder.hpp"
#include "runtime/model/hashing_embedder.hpp"
#include "runtime/model/engine.hpp"
#include "runtime/model/manifest.hpp"
#include "runtime/model/run.hpp"
#include "runtime/model/tool.hpp"

namespace skein {

class event_log;

using send_atom = caf::atom_constant<caf::atom("send")>;
using submit_atom = caf::atom_constant<caf::atom("submit")>;
using cancel_atom = caf::atom_constant<caf::atom("cancel")>;
using subscribe_atom = caf::atom_constant<caf::atom("subscribe")>;
using unsubscribe_atom = caf::atom_constant<caf::atom("unsubscr")>;
using event_atom = caf::atom_constant<caf::atom("event")>;
using delta_atom = caf::atom_constant<caf::atom("delta")>;
using resolve_atom = caf::atom_constant<caf::atom("resolve")>;
using passivate_atom = caf::atom_constant<caf::atom("passivate")>;
using mint_child_atom = caf::atom_constant<caf::atom("mintchild")>;
using create_atom = caf::atom_constant<caf::atom("create")>;
using fork_atom = caf::atom_constant<caf::atom("fork")>;
using agent_atom = caf::atom_constant<caf::atom("agent")>;
using delete_atom = caf::atom_constant<caf::atom("delete")>;
using stop_atom = caf::atom_constant<caf::atom("stop")>;
using run_atom = caf::atom_constant<caf::atom("run")>;
using reconcile_atom = caf::atom_constant<caf::atom("reconcile")>;
using import_atom = caf::atom_constant<caf::atom("import")>;
using archive_atom = caf::atom_constant<caf::atom("archive")>;
using retire_atom = caf::atom_constant<caf::atom("retire")>;
using compact_atom = caf::atom_constant<caf::atom("compact")>;

// A compaction of a thread's working view (runtime/model/compaction.hpp; the
// answer is a compact_result, defined there so that the runtime's public header
// needs no actor header).
struct compact_request {
  compact_options options;           // overrides of the agent's settings
  bool automatic = false;            // asked by the compaction effect, not a person
  // The effect that asked, if any: its cursor for the thread is written in the
  // compaction's tick (tick::effect_cursors), so it is applied exactly once.
  std::string effect;                // "": none
  uint64_t effect_seq = 0;
};
using title_atom = caf::atom_constant<caf::atom("title")>;
using member_atom = caf::atom_constant<caf::atom("member")>;
using dispatch_atom = caf::atom_constant<caf::atom("dispatch")>;

// Engines and tools an agent may name, resolved when the agent is loaded.
struct registry {
  std::map<std::string, engine_factory> engines;
  std::map<std::string, embedder_factory> embedders = {{"hashing", make_hashing_embedder}};
  std::map<std::string, std::shared_ptr<tool>> tools;
};

// An agent with its engine built and its tools resolved. Immutable; shared.
struct agent_spec {
  agent_config config;
  std::shared_ptr<skein::engine> engine;
  std::shared_ptr<skein::embedder> embedder;  // null when config.effects.embedder is ""
  std::vector<std::shared_ptr<tool>> tools;
  std::vector<tool_spec> tool_specs;

  std::shared_ptr<tool> find_tool(std::string_view name) const;
};
using agent_spec_ptr = std::shared_ptr<const agent_spec>;

// The spec of the built-in ask_agent tool, offered to an agent whose
// delegation.agents is not empty (arguments {"agent":id,"question":string}).
tool_spec ask_agent_spec(const agent_config& config);

// Builds the engine and resolves the tools an agent names; invalid_input names
// an unknown engine or tool.
status build_agent_spec(const agent_config& config, const registry& reg, timer_service& timers,
                        agent_spec_ptr* out);

// Compactions across every thread, for runtime_stats and /metrics. Atomic
// counters: thread actors add, anyone reads (like the log's counters).
struct compaction_counters {
  std::atomic<uint64_t> done{0};
  std::atomic<uint64_t> failed{0};
  std::atomic<uint64_t> tokens_before{0};  // totals over the compactions done
  std::atomic<uint64_t> tokens_after{0};
};

struct core_options {
  size_t active_threads_max = 100000;                 // active thread actors before LRU passivation
  std::chrono::milliseconds idle_passivate{60000};    // an idle thread actor quits after this
  size_t thread_queue_max = 64;                       // inputs waiting on one thread
  // Wall time (ms since the epoch) for event times, heartbeats and staleness;
  // injectable so that tests control it.
  std::function<int64_t()> wall_clock;
  std::chrono::milliseconds heartbeat_interval{5000};  // a running thread records one this often
  int64_t heartbeat_stale_ms = 90000;                  // running, last heartbeat older: orphaned
  int64_t start_stale_ms = 1800000;                    // running, no heartbeat at all, this old: orphaned
  // Shared by the runtime and every thread actor; copies share the counters.
  std::shared_ptr<compaction_counters> compactions = std::make_shared<compaction_counters>();
  // Storage reads off the actors (reader_pool.hpp): reader threads, and reads
  // queued or running at once before a new one is refused as overloaded.
  size_t reader_threads = 2;
  size_t reads_queued_max = 4096;
  // false: readers are scheduled actors (CAF's test coordinator drives them).
  bool detached_readers = true;
  // A cluster node mints only the thread ids it owns (runtime/model/cluster.hpp);
  // empty: every id is this runtime's.
  std::function<bool(std::string_view)> owns_id;
  // A replicated cluster's node serves only the threads of the partitions it
  // leads: the directory activates no other (unavailable). Empty: every one.
  std::function<bool(std::string_view thread_id)> serves;
};

// A new thread id (ids.hpp) that `options.owns_id` accepts, within a bounded
// number of tries (the last one tried after them: its write is refused where
// a replicated cluster's node leads none of the partitions).
std::string mint_thread_id(const core_options& options, int64_t now_ms);

// Whether a manifest describes a run nobody is driving any more, at wall time `now_ms`.
bool run_is_stale(const manifest& m, const core_options& options, int64_t now_ms);

struct directory_stats {
  uint64_t active = 0;        // thread actors alive now
  uint64_t activations = 0;   // thread actors spawned since start
  uint64_t passivations = 0;  // thread actors that quit idle
  uint64_t agents = 0;
};

}  // namespace skein

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(skein::engine_reply)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(skein::tool_output)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(skein::directory_stats)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(skein::compact_request)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(skein::agent_spec_ptr)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(std::function<void()>)
