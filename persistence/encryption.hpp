// encryption: encryption at rest of an event log's database directory.
//
// A master key (32 bytes, from a file or an environment variable, never from a
// command line) wraps a per-database data key; the data key encrypts every file
// RocksDB writes (WAL, SST, MANIFEST, OPTIONS, CURRENT, IDENTITY) with AES-256
// in counter mode, through RocksDB's encrypted environment. The wrapped data key
// lives beside the database in `SKEIN-KEY` (format at the top of encryption.cpp).
// A wrong master key fails the tag of the wrapped key, so it is refused before
// RocksDB opens anything.
//
// What is not encrypted: the informational LOG (event_log.cpp writes it with
// plain POSIX calls; it holds no keys or values), SKEIN-KEY itself (the data key
// in it is wrapped), file names, sizes and times.
//
// Thread-safety: master_key is a value, immutable once loaded. encrypted_env and
// the cipher under it may be used from any thread (RocksDB's background threads
// do): each call uses its own thread's cipher context.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>

#include "runtime/model/status.hpp"

namespace rocksdb {
class Env;
}  // namespace rocksdb

namespace skein {

inline constexpr size_t key_bytes = 32;  // AES-256

// 32 secret bytes, zeroed when destroyed. Copyable only on purpose (a value that
// holds a secret is passed by reference or shared_ptr<const master_key>).
class master_key {
 public:
  master_key() = default;
  explicit master_key(const std::array<uint8_t, key_bytes>& bytes) : bytes_(bytes) {}
  ~master_key();
  master_key(const master_key&) = default;
  master_key& operator=(const master_key&) = default;

  const uint8_t* data() const { return bytes_.data(); }

 private:
  std::array<uint8_t, key_bytes> bytes_{};
};

// Where a master key comes from: the path of a file, or the NAME of an
// environment variable holding it (never the key itself).
struct key_source {
  enum class kind : uint8_t { file, env };
  kind from = kind::file;
  std::string name;  // the file's path or the variable's name

  static key_source file(std::string path) { return {kind::file, std::move(path)}; }
  static key_source env(std::string var) { return {kind::env, std::move(var)}; }
  // "key file /etc/skein.key", "environment variable SKEIN_KEY": for messages.
  std::string describe() const;
};

// `n` bytes from the kernel's CSPRNG (getrandom; blocks only until it is
// seeded, at boot). false when the kernel refuses. Not OpenSSL's RAND_bytes:
// see encryption.cpp.
bool random_bytes(void* out, size_t n);

// Reads 64 hex characters (surrounding whitespace allowed) from the source.
// not_found: the file cannot be read or the variable is unset; invalid_input:
// anything else than one 64-hex-character key. Messages name the source, never
// the key material.
status load_master_key(const key_source& source, master_key* out);

// The file beside the database that holds its wrapped data key.
inline constexpr const char* key_file_name = "SKEIN-KEY";

// What an encrypted database is opened with: the RocksDB environment that
// encrypts with its data key. Owns the environment; `base` is borrowed and must
// outlive it.
class encrypted_env {
 public:
  ~encrypted_env();
  encrypted_env(const encrypted_env&) = delete;
  encrypted_env& operator=(const encrypted_env&) = delete;
  rocksdb::Env* env() const { return env_.get(); }

 private:
  friend status open_database_key(const std::string&, const master_key*, rocksdb::Env*, bool,
                                  std::unique_ptr<encrypted_env>*);
  encrypted_env() = default;
  std::unique_ptr<rocksdb::Env> env_;
};

// Checks the database directory `dir` against `key` and, when it is (to be)
// encrypted, makes its environment (*out; null for a plain database). Before
// RocksDB opens anything, and creating, changing or deleting no file when it
// refuses:
//   SKEIN-KEY and the key unwraps it      -> the database's environment
//   SKEIN-KEY and the key does not         -> invalid_input "wrong key"
//   SKEIN-KEY, no key                      -> invalid_input "encrypted: a key is needed"
//   no SKEIN-KEY, a key, a database there  -> invalid_input "not encrypted: use skein rekey"
//   no SKEIN-KEY, a key, no database, create -> the directory and a new SKEIN-KEY
//     (a new random data key), durable before this returns
//   no SKEIN-KEY, no key                   -> a plain database (*out null)
// `base`: the environment to encrypt over (borrowed); null: rocksdb::Env::Default().
status open_database_key(const std::string& dir, const master_key* key, rocksdb::Env* base, bool create,
                         std::unique_ptr<encrypted_env>* out);

// Writes a new SKEIN-KEY in `dir` (which must exist): a new random data key
// wrapped by `key`. Durable: a temp file, fsync, rename, fsync of the directory.
// Refuses (conflict) if one is there.
status create_database_key(const std::string& dir, const master_key& key);

// Whether `dir` holds a SKEIN-KEY.
bool has_database_key(const std::string& dir);

}  // namespace skein
