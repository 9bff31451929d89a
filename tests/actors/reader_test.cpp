// Storage reads off the actors: the reader pool (bounded, answering by
// message), and subscription backlogs read through it while live events wait
// their turn.
#include <caf/all.hpp>
#include <catch2/catch.hpp>
#include <algorithm>
#include <future>
#include <map>

#include "actors/published_event.hpp"
#include "actors/reader_pool.hpp"
#include "tests/support/det_runtime.hpp"

using namespace skein;
using namespace skein::test;
using namespace std::chrono_literals;

namespace {

using fill_atom = caf::atom_constant<caf::atom("fill")>;
using ping_atom = caf::atom_constant<caf::atom("ping")>;

// Outcomes of the asker's reads, in the order they came back.
struct outcomes {
  std::mutex mu;
  std::vector<std::pair<int, status>> done;  // (job number, outcome)
  void add(int job, status s) {
    std::lock_guard<std::mutex> lock{mu};
    done.emplace_back(job, std::move(s));
  }
  std::vector<std::pair<int, status>> get() {
    std::lock_guard<std::mutex> lock{mu};
    return done;
  }
};

bool wait_for(const std::function<bool()>& cond, std::chrono::milliseconds limit = 10s) {
  auto until = std::chrono::steady_clock::now() + limit;
  while (!cond()) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(1ms);
  }
  return true;
}

// Runs every job but the readers': what the actors do while reads are pending.
void run_all_but_readers(det_runtime& rt) {
  rt.sched->run_jobs_filtered([](caf::resumable* job) {
    auto* actor = dynamic_cast<caf::local_actor*>(job);
    return actor == nullptr || std::string_view{actor->name()} != "skein.reader";
  });
}

}  // namespace

TEST_CASE("a full reader pool refuses at once and the asking actor never blocks") {
  caf::actor_system_config cfg;
  caf::actor_system sys{cfg};
  auto pool = std::make_shared<reader_pool>(sys, reader_options{1, 2, true});
  auto gate = std::make_shared<std::promise<void>>();
  std::shared_future<void> open = gate->get_future().share();
  auto seen = std::make_shared<outcomes>();
  auto asker = sys.spawn([pool, open, seen](caf::event_based_actor* self) -> caf::behavior {
    return {
        [=](fill_atom) {
          for (int i = 1; i <= 3; ++i)
            pool->read_then(
                self,
                [open, i] {
                  open.wait();  // a slow disk
                  return i == 2 ? status::not_found("job 2 found nothing") : status::ok();
                },
                [seen, i](const status& s) { seen->add(i, s); });
        },
        [](ping_atom) { return 7; },
    };
  });
  caf::scoped_actor self{sys};
  self->send(asker, fill_atom::value);
  // The third read found two queued: refused at once, while the first two wait.
  REQUIRE(wait_for([&] { return seen->get().size() == 1; }));
  auto first = seen->get();
  CHECK(first[0].first == 3);
  CHECK(first[0].second.code() == errc::overloaded);
  CHECK_THAT(first[0].second.message(), Catch::Contains("reads_queued_max"));
  CHECK(pool->queued() == 2);
  // The asker answers while its reads are pending: it is not blocked on them.
  int pong = 0;
  self->request(asker, 10s, ping_atom::value).receive([&](int v) { pong = v; }, [&](caf::error&) {});
  CHECK(pong == 7);
  gate->set_value();
  REQUIRE(wait_for([&] { return seen->get().size() == 3; }));
  auto all = seen->get();
  // The reads came back by message, each with its own outcome, in order.
  CHECK(all[1].first == 1);
  CHECK(all[1].second.is_ok());
  CHECK(all[2].first == 2);
  CHECK(all[2].second.code() == errc::not_found);
  CHECK(pool->queued() == 0);
  pool->stop();
  self->send_exit(asker, caf::exit_reason::user_shutdown);
}

TEST_CASE("read_or_inline: a full pool runs the read in the asking actor, at once, never refused") {
  caf::actor_system_config cfg;
  caf::actor_system sys{cfg};
  auto pool = std::make_shared<reader_pool>(sys, reader_options{1, 1, true});
  auto gate = std::make_shared<std::promise<void>>();
  std::shared_future<void> open = gate->get_future().share();
  auto seen = std::make_shared<outcomes>();
  // For each job: whether it ran on the asker's own thread, and whether its
  // done came back before read_or_inline returned.
  auto on_asker = std::make_shared<std::map<int, bool>>();
  auto done_inside = std::make_shared<std::map<int, bool>>();
  auto mu = std::make_shared<std::mutex>();
  auto asker = sys.spawn([=](caf::event_based_actor* self) -> caf::behavior {
    return {
        [=](fill_atom) {
          for (int i = 1; i <= 2; ++i) {
            const auto me = std::this_thread::get_id();
            auto returned = std::make_shared<bool>(false);
            pool->read_or_inline(
                self,
                [=] {
                  if (i == 1) open.wait();  // the one reader is busy with job 1
                  std::lock_guard<std::mutex> lock{*mu};
                  (*on_asker)[i] = std::this_thread::get_id() == me;
                  return status::ok();
                },
                [=](const status& s) {
                  {
                    std::lock_guard<std::mutex> lock{*mu};
                    (*done_inside)[i] = !*returned;
                  }
                  seen->add(i, s);
                });
            *returned = true;
          }
        },
    };
  });
  caf::scoped_actor self{sys};
  self->send(asker, fill_atom::value);
  // Job 2 found the pool full and ran in place: done before job 1's read ended.
  REQUIRE(wait_for([&] { return seen->get().size() == 1; }));
  CHECK(seen->get()[0].first == 2);
  CHECK(seen->get()[0].second.is_ok());
  gate->set_value();
  REQUIRE(wait_for([&] { return seen->get().size() == 2; }));
  CHECK(seen->get()[1].first == 1);
  CHECK(seen->get()[1].second.is_ok());
  std::lock_guard<std::mutex> lock{*mu};
  CHECK((*on_asker)[2]);
  CHECK((*done_inside)[2]);
  CHECK_FALSE((*on_asker)[1]);
  CHECK_FALSE((*done_inside)[1]);
  CHECK(pool->queued() == 0);
  pool->stop();
  self->send_exit(asker, caf::exit_reason::user_shutdown);
}

TEST_CASE("live events committed while a subscription's backlog is read follow the backlog in order") {
  det_runtime rt;
  auto t = rt.start_run(scripted_agent("a", R"({"default": {"reply": "ok"}})"), "first");
  REQUIRE(rt.drain().size() == 1);
  const uint64_t backlog_last = rt.read_manifest(t.id).last_seq;
  REQUIRE(backlog_last >= 3);

  std::vector<uint64_t> seqs;
  std::vector<std::string> jsons;
  auto sink = rt.sys->spawn([&](caf::event_based_actor*) -> caf::behavior {
    return {[&](event_atom, std::string&, published_ptr& e) {
              seqs.push_back(e->seq());
              jsons.push_back(e->json());
            },
            [](delta_atom, std::string&, std::string&, std::string&) {}};
  });
  auto target = rt.thread(t.id);
  (*rt.self)->send(target, subscribe_atom::value, uint64_t{2}, caf::actor_cast<event_sink_actor>(sink));
  run_input in;
  in.text = "second";
  (*rt.self)->send(target, send_atom::value, std::move(in));
  // The run goes on and commits while the backlog read waits for a reader.
  run_all_but_readers(rt);
  const uint64_t last = rt.read_manifest(t.id).last_seq;
  REQUIRE(last > backlog_last);  // live events were committed meanwhile
  CHECK(seqs.empty());           // and held: nothing may overtake the backlog
  rt.run();
  std::vector<uint64_t> expected;
  for (uint64_t s = 2; s <= last; ++s) expected.push_back(s);
  CHECK(seqs == expected);
  // Backlog and live events alike carry the stored bytes.
  auto stored = rt.events(t.id);
  for (size_t i = 0; i < seqs.size() && i < jsons.size(); ++i) {
    std::string json;
    REQUIRE(encode_event(stored[seqs[i] - 1], &json).is_ok());
    CHECK(jsons[i] == json);
  }
  // The subscribe answer: the next seq after the backlog, once it was sent.
  uint64_t next = 0;
  size_t results = 0;
  while (!(*rt.self)->mailbox().empty())
    (*rt.self)->receive([&](uint64_t n) { next = n; }, [&](run_result&) { ++results; }, [](caf::error&) {});
  CHECK(next == backlog_last + 1);
  CHECK(results == 1);
  (*rt.self)->send_exit(sink, caf::exit_reason::user_shutdown);
  rt.run();
}
