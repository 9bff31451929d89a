// skein-crash-writer DIR THREADS SEED: commits ticks to THREADS threads through
// the journal in sync mode until killed, and prints "ack <thread> <last_seq>" on
// stdout (one write(2) per line, so no line is torn) after each acknowledgement.
//
// Every event's text is "tick <first> <size>": the tick it belongs to, so that the
// crash test can prove no tick survived in part.
#include <caf/all.hpp>
#include <cstdio>
#include <random>
#include <string>
#include <unistd.h>

#include "actors/error.hpp"
#include "actors/journal.hpp"
#include "runtime/model/ids.hpp"

using namespace skein;

namespace {

tick next_tick(const std::string& thread, uint64_t first, size_t size, bool create) {
  tick t;
  t.thread_id = thread;
  t.create = create;
  t.manifest.id = thread;
  t.manifest.agent_id = "crash";
  t.manifest.created_at_ms = 1;
  t.manifest.updated_at_ms = now_ms();
  for (size_t i = 0; i < size; ++i) {
    event e = make_message(message_role::user,
                           "tick " + std::to_string(first) + " " + std::to_string(size));
    e.seq = first + i;
    e.ts_ms = now_ms();
    t.events.push_back(std::move(e));
  }
  return t;
}

caf::behavior writer(caf::event_based_actor* self, journal_actor journal, std::string thread,
                     uint64_t last_seq, uint64_t seed) {
  struct state {
    uint64_t last;
    std::mt19937_64 rng;
  };
  auto st = std::make_shared<state>(state{last_seq, std::mt19937_64{seed}});
  auto step = std::make_shared<std::function<void()>>();
  *step = [=] {
    size_t size = 1 + st->rng() % 5;
    auto t = next_tick(thread, st->last + 1, size, st->last == 0);
    self->request(journal, caf::infinite, commit_atom::value, std::move(t))
        .then(
            [=](uint64_t seq) {
              st->last = seq;
              std::string line = "ack " + thread + " " + std::to_string(seq) + "\n";
              if (::write(1, line.data(), line.size()) < 0) std::_Exit(3);
              (*step)();
            },
            [=](caf::error& e) {
              std::fprintf(stderr, "crash-writer: %s\n", to_status(e).to_string().c_str());
              std::_Exit(2);
            });
  };
  self->send(self, caf::ok_atom::value);
  return {[=](caf::ok_atom) { (*step)(); }};
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: skein-crash-writer DIR THREADS SEED\n");
    return 64;
  }
  log_options o;
  o.path = argv[1];
  o.mode = durability::sync;
  int threads = std::stoi(argv[2]);
  uint64_t seed = std::stoull(argv[3]);
  std::unique_ptr<event_log> log;
  if (auto s = event_log::open(o, &log); !s) {
    std::fprintf(stderr, "crash-writer: %s\n", s.to_string().c_str());
    return 1;
  }
  caf::actor_system_config cfg;
  register_skein_types(cfg);
  caf::actor_system sys{cfg};
  auto journal = spawn_journal(sys, *log);
  for (int i = 0; i < threads; ++i) {
    std::string id = "c" + std::to_string(i);
    manifest m;
    uint64_t last = 0;
    if (auto s = log->read_manifest(id, &m); s) last = m.last_seq;
    else if (s.code() != errc::not_found) {
      std::fprintf(stderr, "crash-writer: %s\n", s.to_string().c_str());
      return 1;
    }
    sys.spawn(writer, journal, id, last, seed + static_cast<uint64_t>(i));
  }
  if (::write(1, "ready\n", 6) < 0) return 3;
  sys.await_all_actors_done();  // never: the writers run until the process is killed
  return 0;
}
