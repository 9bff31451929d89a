// skein demo: one conversation written through the journal and read back.
#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <cstdio>
#include <cstring>
#include <string>

#include "actors/error.hpp"
#include "actors/journal.hpp"
#include "persistence/event_log.hpp"
#include "runtime/model/ids.hpp"

namespace skein::tools {
namespace {

void print_event(const event& e) {
  std::printf("  #%-3llu %-22s", static_cast<unsigned long long>(e.seq),
              std::string{to_string(e.type)}.c_str());
  switch (e.type) {
    case event_type::message:
      std::printf("%s: %s\n", std::string{to_string(e.role)}.c_str(), e.text.c_str());
      break;
    case event_type::tool_call:
      std::printf("%s %s  [%s]\n", e.name.c_str(), e.json.c_str(), e.call_id.c_str());
      break;
    case event_type::tool_result:
      std::printf("%s -> %s%s  [%s]\n", e.name.c_str(), e.text.c_str(),
                  e.is_error ? " (error)" : "", e.call_id.c_str());
      break;
    case event_type::result:
      std::printf("%s: %llu in / %llu out tokens, $%.4f, %llu ms, %u turn(s)\n",
                  e.outcome.c_str(), static_cast<unsigned long long>(e.usage.input_tokens),
                  static_cast<unsigned long long>(e.usage.output_tokens), e.cost_usd,
                  static_cast<unsigned long long>(e.duration_ms), e.turns);
      break;
    case event_type::signal:
      std::printf("%s %s\n", e.name.c_str(), e.json.c_str());
      break;
    default:
      std::printf("%s\n", e.text.c_str());
  }
}

std::vector<event> conversation(const std::string& run, int64_t now) {
  std::vector<event> evs;
  evs.push_back(make_signal("thread.start"));
  evs.push_back(make_message(message_role::user, "What is the weather in Lisbon?"));
  evs.push_back(make_tool_call("call_1", "weather", R"({"city":"Lisbon"})"));
  evs.push_back(make_tool_result("call_1", "weather", "18°C, light wind from the north", false));
  evs.push_back(make_message(message_role::assistant,
                             "It is 18°C in Lisbon with a light northerly wind."));
  evs.push_back(make_result({412, 37, 0, 0}, 0.00121, 840, 2, "completed"));
  evs.push_back(make_signal("thread.stop", R"({"outcome":"completed"})"));
  for (size_t i = 0; i < evs.size(); ++i) {
    evs[i].seq = i + 1;
    evs[i].ts_ms = now;
    evs[i].run_id = run;
  }
  return evs;
}

}  // namespace

int run_demo(int argc, char** argv) {
  std::string dir = "./skein-data";
  durability mode = durability::sync;
  for (int i = 0; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--data") && i + 1 < argc) {
      dir = argv[++i];
    } else if (!std::strcmp(argv[i], "--durability") && i + 1 < argc) {
      if (!parse_durability(argv[++i], &mode)) {
        std::fprintf(stderr, "skein demo: --durability must be sync, flush or memory\n");
        return 64;
      }
    } else {
      std::fprintf(stderr, "skein demo: unknown option '%s'\n", argv[i]);
      return 64;
    }
  }

  log_options options;
  options.path = dir;
  options.mode = mode;
  std::unique_ptr<event_log> log;
  if (status s = event_log::open(options, &log); !s) {
    std::fprintf(stderr, "skein demo: %s\n", s.to_string().c_str());
    return 1;
  }
  caf::actor_system_config cfg;
  register_skein_types(cfg);
  caf::actor_system sys{cfg};
  auto journal = spawn_journal(sys, *log);

  int64_t now = now_ms();
  tick t;
  t.thread_id = new_thread_id(now);
  t.create = true;
  t.manifest.id = t.thread_id;
  t.manifest.agent_id = "demo";
  t.manifest.title = "Weather in Lisbon";
  t.manifest.created_at_ms = t.manifest.updated_at_ms = now;
  t.manifest.status = thread_status::open;
  t.events = conversation(new_run_id(), now);
  t.manifest.usage = {412, 37, 0, 0};
  t.manifest.cost_usd = 0.00121;

  status s = journal_commit(sys, journal, t);
  status closed = journal_close(sys, journal);
  if (!s || !closed) {
    std::fprintf(stderr, "skein demo: commit failed: %s\n", (!s ? s : closed).to_string().c_str());
    return 1;
  }
  std::printf("skein demo: event log at %s (durability %s)\n", dir.c_str(),
              std::string{to_string(mode)}.c_str());
  std::printf("thread %s committed in one atomic tick, last_seq %llu\n\n", t.thread_id.c_str(),
              static_cast<unsigned long long>(t.manifest.last_seq));

  manifest m;
  std::vector<event> events;
  if (status r = log->read_manifest(t.thread_id, &m); !r) {
    std::fprintf(stderr, "skein demo: %s\n", r.to_string().c_str());
    return 1;
  }
  if (status r = log->read_events(t.thread_id, 1, 0, &events); !r) {
    std::fprintf(stderr, "skein demo: %s\n", r.to_string().c_str());
    return 1;
  }
  std::printf("read back: \"%s\" (agent %s, status %s, %zu events)\n", m.title.c_str(),
              m.agent_id.c_str(), std::string{to_string(m.status)}.c_str(), events.size());
  for (const auto& e : events) print_event(e);

  thread_query q;
  q.index = thread_query::by::agent;
  q.value = "demo";
  q.limit = thread_query::limit_max;
  thread_page page;
  size_t total = 0;
  do {
    if (status r = log->list_threads(q, &page); !r) {
      std::fprintf(stderr, "skein demo: %s\n", r.to_string().c_str());
      return 1;
    }
    total += page.threads.size();
    q.cursor = page.next_cursor;
  } while (!q.cursor.empty());
  std::printf("\nagent demo now has %zu thread(s) in %s\n", total, dir.c_str());
  return 0;
}

}  // namespace skein::tools
