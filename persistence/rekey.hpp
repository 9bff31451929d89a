// rekey: rewrites a database under a new data key (or encrypts a plain one, or
// decrypts one), and finishes or rolls back a rekey that a crash interrupted.
//
// The copy goes to a sibling directory `<dir>.rekey` and is swapped in by two
// renames; at every point a crash leaves either the old database (usable with
// the old key) or the new one, complete (usable with the new key):
//
//   1. remove a stale <dir>.rekey; open <dir> with the old key (RocksDB's LOCK:
//      refused while another process has it open)
//   2. <dir>.rekey: a new SKEIN-KEY (new random data key, wrapped by the new
//      master key) unless decrypting; every key/value of every column family
//      copied in batches; flushed, synced, closed; the directory fsynced
//   3. rename <dir> -> <dir>.rekey-old; fsync the parent
//   4. rename <dir>.rekey -> <dir>; fsync the parent        (the commit point)
//   5. remove <dir>.rekey-old; fsync the parent
//
// recover_interrupted_rekey(dir), run by every open of an event log, reads
// what is there:
//   <dir> missing, <dir>.rekey-old present -> crashed between 3 and 4: rename
//       <dir>.rekey-old back to <dir> and remove <dir>.rekey (roll back)
//   <dir> present, <dir>.rekey-old present -> crashed after 4: remove the old
//   <dir>.rekey present otherwise          -> crashed before 3: remove it
//
// Not thread-safe with anything else using `dir`: run it with the server stopped.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "persistence/encryption.hpp"
#include "runtime/model/status.hpp"

namespace skein {

struct rekey_progress {
  // The step just done. `copied` reports a batch written (family, keys, bytes:
  // that family's totals so far); the others mark the protocol's steps.
  enum class phase : uint8_t {
    opened,         // the old database is open
    key_written,    // <dir>.rekey and its SKEIN-KEY are written (none when decrypting)
    copied,         // one batch of `family` copied
    family_done,    // every key of `family` copied
    synced,         // the new database flushed, synced and closed
    renamed_old,    // step 3 done: <dir> is now <dir>.rekey-old
    swapped,        // step 4 done: the new database is <dir>
    done,           // the old copy removed
  };
  phase at = phase::opened;
  std::string family;
  uint64_t keys = 0;
  uint64_t bytes = 0;  // key and value bytes
};
std::string_view to_string(rekey_progress::phase p);

// Rewrites the database at `dir` under `new_key` (null: decrypted, plain). The
// old one must open with `old_key` (null: plain). `progress` (may be empty) is
// called after each step, on the calling thread.
status rekey_database(const std::string& dir, const master_key* old_key, const master_key* new_key,
                      const std::function<void(const rekey_progress&)>& progress);

// Finishes or rolls back a rekey of `dir` that a crash interrupted (the rules
// above); does nothing, and touches no file, when there is none.
status recover_interrupted_rekey(const std::string& dir);

}  // namespace skein
