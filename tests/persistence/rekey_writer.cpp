// The rekey crash test's child: rekeys a database and SIGKILLs itself when the
// rekey reports the named phase (rekey.hpp), or finishes and prints "done".
//
//   skein-rekey-writer DIR OLD_KEY_FILE|- NEW_KEY_FILE|- PHASE|-
#include <csignal>
#include <cstdio>
#include <string>

#include "persistence/rekey.hpp"

int main(int argc, char** argv) {
  using namespace skein;
  if (argc != 5) return std::fprintf(stderr, "usage: skein-rekey-writer DIR OLD|- NEW|- PHASE|-\n"), 64;
  std::string dir = argv[1], old_file = argv[2], new_file = argv[3], phase = argv[4];
  master_key old_key, new_key;
  if (old_file != "-" && !load_master_key(key_source::file(old_file), &old_key)) return 65;
  if (new_file != "-" && !load_master_key(key_source::file(new_file), &new_key)) return 65;
  status s = rekey_database(dir, old_file == "-" ? nullptr : &old_key, new_file == "-" ? nullptr : &new_key,
                            [&](const rekey_progress& p) {
                              if (to_string(p.at) == phase) std::raise(SIGKILL);
                            });
  if (!s) return std::fprintf(stderr, "rekey: %s\n", s.to_string().c_str()), 1;
  std::printf("done\n");
  return 0;
}
