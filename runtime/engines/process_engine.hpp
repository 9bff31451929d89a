// The built-in `process` engine: an external program that speaks JSON lines on
// its stdin and stdout (docs/engines.md, "The process engine protocol"). One engine object
// serves every thread of an agent, so it owns one long-lived child process, and
// many calls are in flight on it at once, matched by id.
//
//   config := {"command":[string...],          argv; argv[0] absolute or found on PATH
//              "env":{string:string...},        extra variables over skein's own
//              "cwd":string,                    the program's working directory
//              "restart_backoff_ms":uint,       first delay before a restart (100)
//              "restart_backoff_max_ms":uint,   the delay doubles up to this (10000)
//              "line_bytes_max":uint,           longest line the program may send (16 MiB)
//              "calls_in_flight_max":uint}      calls on the process at once (256)
//
// Unknown fields and wrong types are config errors naming the field.
//
// Lifetime: the program starts with the first call (building an engine to check
// a config spawns nothing). It runs in a process group of its own; its pipes are
// close-on-exec in skein; one I/O thread per engine reads its stdout and stderr
// and writes its stdin (an actor never blocks on a write: start() queues the line).
// When the program dies (exit, signal, stdout closed, a line past line_bytes_max)
// every call in flight fails with the reason, and the program is restarted after a
// jittered exponential backoff, reset once it has stayed up for
// process_stable_ms. Calls that arrive while it is down wait for the restart: the
// run's engine idle watchdog bounds that wait. Destroying the engine closes the
// program's stdin, waits process_exit_grace_ms, then sends SIGTERM and later SIGKILL
// to its group and reaps it; calls still in flight then get no callback, and no
// callback runs after the destructor returns.
//
// Thread-safe: start() and the handles' cancel() may be called from any thread.
// Callbacks run on the engine's I/O thread, one at a time, deltas before on_done;
// a call refused at once (calls_in_flight_max, shutting down) gets its on_done
// inside start().
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "runtime/model/engine.hpp"

namespace skein {

inline constexpr uint64_t process_restart_backoff_ms_default = 100;
inline constexpr uint64_t process_restart_backoff_max_ms_default = 10000;
inline constexpr uint64_t process_line_bytes_max_default = 16 << 20;
inline constexpr uint64_t process_calls_in_flight_max_default = 256;
// A program that stays up this long has its restart backoff reset.
inline constexpr uint64_t process_stable_ms = 30000;
// On destruction: after closing stdin, then again after SIGTERM, before the next step.
inline constexpr uint64_t process_exit_grace_ms = 500;
// One line of the program's stderr in skein's log; the rest of a longer line is cut.
inline constexpr size_t process_stderr_line_bytes_max = 4096;
// Dropped lines (not JSON, unknown id or type) logged per program start; the
// rest are only counted.
inline constexpr uint64_t process_dropped_lines_logged_max = 20;

// Where the engine writes its log lines (the program's stderr, dropped lines,
// restarts). Default: skein's stderr. Called from the I/O thread; must not block.
struct process_engine_hooks {
  std::function<void(std::string_view line)> log;
};

// Builds a process engine from `config_json` (the grammar above). `timers` is
// unused: the engine waits on its own I/O thread.
status make_process_engine(std::string_view config_json, timer_service& timers,
                           std::shared_ptr<engine>* out);

// The same with hooks, for hosts and tests that want the log lines.
status make_process_engine_with_hooks(std::string_view config_json, const process_engine_hooks& hooks,
                           std::shared_ptr<engine>* out);

// The process id of the engine's current program, 0 while none runs. For tests
// and diagnostics; `e` must come from make_process_engine.
int process_engine_pid(const engine& e);

}  // namespace skein
