// skein rekey: rewrites a data directory under a new master key, encrypts a
// plain one, or decrypts one (persistence/rekey.hpp has the protocol).
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>

#include <filesystem>
#include <vector>

#include "persistence/encryption.hpp"
#include "persistence/rekey.hpp"
#include "tools/cli/args.hpp"
#include "tools/tool_util.hpp"

namespace skein::tools {
namespace {

int usage_error(const std::string& what) {
  std::fprintf(stderr, "skein rekey: %s\n", what.c_str());
  return 64;
}

int exit_code(const status& s) {
  switch (s.code()) {
    case errc::not_found: return 4;
    case errc::conflict: return 6;
    default: return 1;
  }
}

}  // namespace

int run_rekey(const cli::given& a) {
  const std::string data = a.get("data"), key_file = a.get("key-file"), key_env = a.get("key-env"),
                    new_key_file = a.get("new-key-file"), new_key_env = a.get("new-key-env");
  if (data.empty()) return usage_error("--data DIR is required");
  if (!key_file.empty() && !key_env.empty()) return usage_error("--key-file and --key-env: give one, not both");
  if (!new_key_file.empty() && !new_key_env.empty())
    return usage_error("--new-key-file and --new-key-env: give one, not both");
  if (key_file.empty() && key_env.empty() && new_key_file.empty() && new_key_env.empty())
    return usage_error("no key given: nothing to do (a plain database stays plain)");
  std::shared_ptr<const master_key> old_key, new_key;
  if (status s = load_key_flags(key_file, key_env, &old_key); !s) return fail("skein rekey", s, 1);
  if (status s = load_key_flags(new_key_file, new_key_env, &new_key); !s) return fail("skein rekey", s, 1);

  uint64_t keys = 0, bytes = 0, families = 0;
  auto progress = [&](const rekey_progress& p) {
    if (p.at == rekey_progress::phase::copied) {
      std::fprintf(stderr, "skein rekey: %s: %llu keys, %llu bytes\n", p.family.c_str(),
                   static_cast<unsigned long long>(p.keys), static_cast<unsigned long long>(p.bytes));
    } else if (p.at == rekey_progress::phase::family_done) {
      keys += p.keys;
      bytes += p.bytes;
      ++families;
    } else {
      std::fprintf(stderr, "skein rekey: %s\n", std::string{to_string(p.at)}.c_str());
    }
  };
  // A data directory of namespaces (runtime/namespaces/namespaces.hpp): each database under
  // namespaces/ (names hold no '.'; <name>.rekey... are a rekey's own). Else DIR
  // is one database.
  namespace fs = std::filesystem;
  std::vector<std::string> databases;
  std::error_code ec;
  if (fs::is_directory(fs::path(data) / "namespaces", ec)) {
    for (const auto& e : fs::directory_iterator(fs::path(data) / "namespaces", ec)) {
      std::string name = e.path().filename().string();
      if (e.is_directory() && name.find('.') == std::string::npos) databases.push_back(e.path().string());
    }
    std::sort(databases.begin(), databases.end());
    if (ec) return fail("skein rekey", status::io_error("list " + data + "/namespaces: " + ec.message()), 1);
  } else {
    databases.push_back(data);
  }
  size_t done = 0, skipped = 0;
  for (const auto& db : databases) {
    // Already under the new key (or already plain when decrypting): a rekey
    // that stopped part way is finished by running it again.
    std::unique_ptr<encrypted_env> probe;
    bool under_new = new_key ? has_database_key(db) && open_database_key(db, new_key.get(), nullptr, false, &probe).is_ok()
                             : !has_database_key(db);
    if (under_new) {
      std::fprintf(stderr, "skein rekey: %s: already %s, skipped\n", db.c_str(), new_key ? "under the new key" : "plain");
      ++skipped;
      continue;
    }
    std::fprintf(stderr, "skein rekey: %s\n", db.c_str());
    if (status s = rekey_database(db, old_key.get(), new_key.get(), progress); !s) {
      std::fprintf(stderr, "skein rekey: %zu of %zu databases done before this one; run it again to finish\n", done,
                   databases.size());
      return fail("skein rekey", status{s.code(), db + ": " + s.message()}, exit_code(s));
    }
    ++done;
  }
  std::printf("skein rekey: %s is now %s: %zu database(s) rewritten, %zu already so; %llu keys, %llu bytes in %llu "
              "column families copied\n",
              data.c_str(), new_key ? "encrypted under the new key" : "plain (decrypted)", done, skipped,
              static_cast<unsigned long long>(keys), static_cast<unsigned long long>(bytes),
              static_cast<unsigned long long>(families));
  return 0;
}

namespace cli {

const subcommand& rekey_subcommand() {
  static const subcommand sub{
      "rekey",
      "rewrites a data directory under a new master key, encrypts or decrypts it",
      "Rekeys every namespace's database of the data directory DIR (or DIR itself when it\n"
      "is one database): copies it into <database>.rekey under a new random data key\n"
      "wrapped by the new master key, then swaps it in; a crash at any point leaves the old\n"
      "database (old key) or the new one (new key), and the next open finishes or rolls\n"
      "back. A database already under the new key is skipped, so a rekey cut short is\n"
      "finished by running it again. Stop the server first: a database open elsewhere is\n"
      "refused. A key is 64 hex characters in a file or in the named environment variable,\n"
      "never on the command line. Progress goes to stderr, the summary to stdout.",
      {opt("--data", "DIR", "the data directory").req(),
       opt("--key-file", "P", "the current master key; none: DIR is plain"),
       opt("--key-env", "NAME", "or the environment variable holding it"),
       opt("--new-key-file", "P", "the new master key; none: decrypt DIR"),
       opt("--new-key-env", "NAME", "or the environment variable holding it")},
      run_rekey,
      "exit codes: 0 done; 1 failure; 4 no database at DIR; 6 DIR is in use; 64 usage error"};
  return sub;
}

}  // namespace cli
}  // namespace skein::tools
