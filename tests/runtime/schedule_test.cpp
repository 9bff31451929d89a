// The scheduler through the runtime: real RocksDB, the runtime's clock under the
// test's control, firings driven by fire_due_schedules() (no periodic wake).
#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <cstdio>
#include <random>
#include <thread>

#include "tests/support/runtime_fixture.hpp"

using namespace skein;
using namespace skein::test;
using namespace std::chrono_literals;

namespace {

// ms since the epoch of a UTC civil time (Howard Hinnant's days_from_civil).
int64_t utc_ms(int y, unsigned m, unsigned d, unsigned hh = 0, unsigned mm = 0) {
  y -= m <= 2;
  const int era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  int64_t days = static_cast<int64_t>(era) * 146097 + static_cast<int64_t>(doe) - 719468;
  return ((days * 24 + hh) * 60 + mm) * 60000;
}

struct test_clock {
  std::shared_ptr<std::atomic<int64_t>> now = std::make_shared<std::atomic<int64_t>>(0);
  void set(int64_t ms) { now->store(ms); }
  int64_t get() const { return now->load(); }
};

runtime_options scheduled_options(const test_clock& clock, int64_t grace_ms = 60000) {
  runtime_options o = without_effects();
  o.clock = [n = clock.now] { return n->load(); };
  o.schedule_wake_ms = 0;  // only fire_due_schedules() fires
  o.schedule_grace_ms = grace_ms;
  return o;
}

struct sched_fixture {
  test_clock clock;
  temp_dir dir;
  std::unique_ptr<runtime_fixture> f;

  explicit sched_fixture(int64_t t0, int64_t grace_ms = 60000) : grace(grace_ms) {
    clock.set(t0);
    open();
    f->agent("a", "");
  }
  int64_t grace;

  void open() {
    runtime_options o = scheduled_options(clock, grace);
    o.data_dir = dir.str();
    f = std::make_unique<runtime_fixture>(std::move(o), false);
  }
  void reopen() {
    REQUIRE(f->rt->close().is_ok());
    f.reset();
    open();
  }
  runtime& rt() { return *f->rt; }

  schedule create(schedule s) {
    if (s.agent_id.empty()) s.agent_id = "a";
    if (s.input_text.empty()) s.input_text = "scheduled input";
    schedule out;
    status c = rt().create_schedule(s, &out);
    INFO(c.to_string());
    REQUIRE(c.is_ok());
    return out;
  }
  schedule get(const std::string& id) {
    schedule s;
    REQUIRE(rt().get_schedule(id, &s).is_ok());
    return s;
  }
  size_t fire() {
    size_t n = 0;
    status s = rt().fire_due_schedules(&n);
    INFO(s.to_string());
    REQUIRE(s.is_ok());
    return n;
  }
  // Moves the clock to the schedule's next due time and fires it.
  int64_t fire_next(const std::string& id) {
    int64_t due = get(id).next_fire_at_ms;
    REQUIRE(due != 0);
    clock.set(due);
    REQUIRE(fire() == 1);
    return due;
  }
  std::vector<schedule_firing> history(const std::string& id, size_t limit = 1000) {
    std::vector<schedule_firing> out;
    uint64_t next = 0;
    REQUIRE(rt().schedule_history(id, 0, limit, &out, &next).is_ok());
    return out;
  }
  // The thread's log once its runs have all ended.
  std::vector<event> settled(const std::string& thread, size_t runs) {
    std::vector<event> log;
    bool ok = runtime_fixture::eventually([&] {
      log.clear();
      if (!rt().read(thread, history_view::complete, 1, 0, &log).is_ok()) return false;
      size_t stops = 0;
      for (const auto& e : log)
        if (e.type == event_type::signal && e.name == "thread.stop") ++stops;
      return stops >= runs;
    });
    REQUIRE(ok);
    return log;
  }
};

schedule cron(std::string expr, std::string zone = "UTC") {
  schedule s;
  s.kind = schedule_kind::cron;
  s.cron = std::move(expr);
  s.time_zone = std::move(zone);
  return s;
}

schedule interval(uint64_t ms, int64_t anchor = 0) {
  schedule s;
  s.kind = schedule_kind::interval;
  s.interval_ms = ms;
  s.anchor_ms = anchor;
  return s;
}

size_t count_signal(const std::vector<event>& log, const std::string& name, const std::string& run_id) {
  size_t n = 0;
  for (const auto& e : log)
    if (e.type == event_type::signal && e.name == name && e.run_id == run_id) ++n;
  return n;
}

}  // namespace

TEST_CASE("cron on the 31st skips the short months", "[scheduler]") {
  sched_fixture t{utc_ms(2026, 1, 1)};
  schedule s = t.create(cron("0 9 31 * *"));
  std::vector<int64_t> fired;
  for (int i = 0; i < 6; ++i) fired.push_back(t.fire_next(s.id));
  CHECK(fired == std::vector<int64_t>{utc_ms(2026, 1, 31, 9), utc_ms(2026, 3, 31, 9), utc_ms(2026, 5, 31, 9),
                                      utc_ms(2026, 7, 31, 9), utc_ms(2026, 8, 31, 9), utc_ms(2026, 10, 31, 9)});
  auto h = t.history(s.id);
  REQUIRE(h.size() == 6);
  CHECK(h.front().scheduled_at_ms == utc_ms(2026, 10, 31, 9));  // newest first
  CHECK(t.get(s.id).fire_count == 6);
}

TEST_CASE("cron on February 29 fires in leap years only", "[scheduler]") {
  sched_fixture t{utc_ms(2026, 3, 1)};
  schedule s = t.create(cron("0 0 29 2 *"));
  CHECK(s.next_fire_at_ms == utc_ms(2028, 2, 29));
  CHECK(t.fire_next(s.id) == utc_ms(2028, 2, 29));
  CHECK(t.get(s.id).next_fire_at_ms == utc_ms(2032, 2, 29));
}

TEST_CASE("cron in Europe/Berlin across the spring DST change", "[scheduler]") {
  // 02:30 local: CET (+1) on the 28th, inside the gap on the 29th (fires at 03:00
  // CEST, the gap's end), CEST (+2) on the 30th.
  sched_fixture t{utc_ms(2026, 3, 27, 12)};
  schedule s = t.create(cron("30 2 * * *", "Europe/Berlin"));
  std::vector<int64_t> fired;
  for (int i = 0; i < 3; ++i) fired.push_back(t.fire_next(s.id));
  CHECK(fired == std::vector<int64_t>{utc_ms(2026, 3, 28, 1, 30), utc_ms(2026, 3, 29, 1, 0),
                                      utc_ms(2026, 3, 30, 0, 30)});
}

TEST_CASE("interval firings do not drift with late wakeups", "[scheduler]") {
  int64_t t0 = utc_ms(2026, 5, 1);
  sched_fixture t{t0};
  uint64_t seed = std::random_device{}();
  if (const char* env = std::getenv("SKEIN_SEED")) seed = std::strtoull(env, nullptr, 10);
  std::printf("interval drift seed: %llu (SKEIN_SEED replays)\n", static_cast<unsigned long long>(seed));
  std::mt19937_64 rng{seed};
  const int64_t iv = 1000;
  schedule s = t.create(interval(iv, t0 + 500));
  const int firings = 40;
  for (int k = 0; k < firings; ++k) {
    int64_t due = t.get(s.id).next_fire_at_ms;
    REQUIRE(due == t0 + 500 + k * iv);
    t.clock.set(due + static_cast<int64_t>(rng() % 900));  // late, but within the interval
    REQUIRE(t.fire() == 1);
  }
  schedule after = t.get(s.id);
  CHECK(after.fire_count == firings);
  CHECK(after.next_fire_at_ms == t0 + 500 + firings * iv);
  auto h = t.history(s.id);
  REQUIRE(h.size() == firings);
  for (size_t i = 0; i < h.size(); ++i)
    CHECK(h[i].scheduled_at_ms == t0 + 500 + static_cast<int64_t>(firings - 1 - i) * iv);
}

// Every due time of a sub-second interval fires exactly once, however far the
// clock moves between wakes (within the grace): a wake fires each due time
// that is due, not one per schedule. Before, a wake fired at most one due time
// of each schedule, so a 10 ms schedule fell further behind with every wake
// and, past the grace, skipped thousands of firings on an idle server.
TEST_CASE("sub-second intervals: every due time fires once, in order, none skipped", "[scheduler]") {
  uint64_t seed = std::random_device{}();
  if (const char* env = std::getenv("SKEIN_SEED")) seed = std::strtoull(env, nullptr, 10);
  std::printf("sub-second interval seed: %llu (SKEIN_SEED replays)\n", static_cast<unsigned long long>(seed));
  std::mt19937_64 rng{seed};
  const int due_times = 100;
  for (int64_t iv : {int64_t{10}, int64_t{500}}) {
    INFO("interval_ms " << iv);
    int64_t t0 = utc_ms(2026, 5, 1);
    sched_fixture t{t0};
    schedule s = t.create(interval(static_cast<uint64_t>(iv), t0 + iv));
    const int64_t last_due = t0 + iv * due_times;
    const int64_t step_max = iv * 25;  // a wake up to 25 due times late
    int64_t lag_max = 0;
    while (t.clock.get() < last_due) {
      t.clock.set(std::min(last_due, t.clock.get() + 1 + static_cast<int64_t>(rng() % static_cast<uint64_t>(step_max))));
      t.fire();
      // Everything due at this clock fired in that one wake.
      REQUIRE(t.get(s.id).next_fire_at_ms > t.clock.get());
    }
    schedule after = t.get(s.id);
    CHECK(after.fire_count == due_times);
    auto h = t.history(s.id);
    REQUIRE(h.size() == due_times);
    for (size_t i = 0; i < h.size(); ++i) {
      INFO("history row " << i << ": " << to_string(h[i].outcome) << " " << h[i].reason);
      CHECK(h[i].outcome == firing_outcome::fired);
      CHECK(h[i].missed == 0);
      CHECK(h[i].scheduled_at_ms == t0 + iv * static_cast<int64_t>(due_times - i));  // newest first, each once
      lag_max = std::max(lag_max, h[i].fired_at_ms - h[i].scheduled_at_ms);
    }
    CHECK(lag_max < step_max);  // no later than the wake that found it due
  }
}

// The same on the real clock, woken by the scheduler's own timer: it wakes at
// each due time, so a 10 ms and a 500 ms schedule keep their pace on an idle
// runtime. Before, it woke once a second and fired one due time per schedule:
// after 3.6 s a 500 ms schedule had 3 firings, each later than the last.
TEST_CASE("the scheduler wakes at due times: a 10 ms and a 500 ms schedule keep their pace", "[scheduler]") {
  runtime_options o = without_effects();
  o.mode = durability::flush;
  runtime_fixture f{o};
  f.agent("a", "");
  schedule fast, slow;
  {
    schedule s = interval(10);
    s.agent_id = "a";
    s.input_text = "fast";
    REQUIRE(f.rt->create_schedule(s, &fast).is_ok());
    s = interval(500);
    s.agent_id = "a";
    s.input_text = "slow";
    REQUIRE(f.rt->create_schedule(s, &slow).is_ok());
  }
  auto fired = [&](const schedule& s) {
    schedule now;
    REQUIRE(f.rt->get_schedule(s.id, &now).is_ok());
    return now.fire_count;
  };
  // 100 due times of the fast one take a second; the bound is for a loaded machine.
  REQUIRE(runtime_fixture::eventually([&] { return fired(fast) >= 100 && fired(slow) >= 4; }, 30s));
  for (const schedule* s : {&fast, &slow}) {
    std::vector<schedule_firing> h;
    uint64_t next = 0;
    REQUIRE(f.rt->schedule_history(s->id, 0, 1000, &h, &next).is_ok());
    REQUIRE(!h.empty());
    for (size_t i = 0; i < h.size(); ++i) {
      INFO(s->input_text << " row " << i << ": " << to_string(h[i].outcome) << " " << h[i].reason << " scheduled "
                         << h[i].scheduled_at_ms << " fired " << h[i].fired_at_ms);
      CHECK(h[i].outcome == firing_outcome::fired);
      CHECK(h[i].fired_at_ms - h[i].scheduled_at_ms < 1000);  // before: 632, 1133, 1633 ms... for 500 ms
      if (i + 1 < h.size()) CHECK(h[i].scheduled_at_ms - h[i + 1].scheduled_at_ms == static_cast<int64_t>(s->interval_ms));
    }
  }
}

TEST_CASE("a one-shot schedule fires once and is kept", "[scheduler]") {
  int64_t t0 = utc_ms(2026, 5, 1);
  sched_fixture t{t0};
  schedule once;
  once.kind = schedule_kind::once;
  once.at_ms = t0 + 5000;
  schedule s = t.create(once);
  t.clock.set(t0 + 4999);
  CHECK(t.fire() == 0);
  t.clock.set(t0 + 5000);
  CHECK(t.fire() == 1);
  t.clock.set(t0 + 50000);
  CHECK(t.fire() == 0);
  schedule after = t.get(s.id);
  CHECK(after.next_fire_at_ms == 0);
  CHECK(after.fire_count == 1);
  CHECK(t.history(s.id).size() == 1);
}

TEST_CASE("a trigger thread hangs from its schedule and runs the input once", "[scheduler]") {
  int64_t t0 = utc_ms(2026, 5, 1);
  sched_fixture t{t0};
  schedule def = interval(60000);
  def.title_prefix = "Nightly";
  def.tags = {"cron-job"};
  def.input_text = "do the nightly thing";
  schedule s = t.create(def);
  t.fire_next(s.id);
  auto h = t.history(s.id);
  REQUIRE(h.size() == 1);
  REQUIRE(h[0].outcome == firing_outcome::fired);
  manifest m;
  REQUIRE(t.rt().get_thread(h[0].thread_id, &m).is_ok());
  CHECK(m.parent == parent_kind::schedule);
  CHECK(m.parent_id == s.id);
  CHECK(m.agent_id == "a");
  CHECK(m.title.rfind("Nightly ", 0) == 0);
  CHECK(m.tags == std::vector<std::string>{"cron-job"});
  auto log = t.settled(m.id, 1);
  CHECK(check_runs(log) == 1);
  CHECK(count_signal(log, "thread.start", h[0].run_id) == 1);
  CHECK(count_signal(log, "thread.stop", h[0].run_id) == 1);
  size_t inputs = 0;
  for (const auto& e : log)
    if (e.type == event_type::message && e.role == message_role::user && e.text == "do the nightly thing") ++inputs;
  CHECK(inputs == 1);
  // A reopen wakes nothing more: the inbox entry was consumed with the run's start.
  t.reopen();
  CHECK(t.fire() == 0);
  CHECK(check_runs(t.settled(m.id, 1)) == 1);
}

TEST_CASE("a bound thread gets the input, gone, the firing fails and the schedule goes on", "[scheduler]") {
  int64_t t0 = utc_ms(2026, 5, 1);
  sched_fixture t{t0};
  manifest th = t.f->thread("a");
  schedule def = interval(60000);
  def.thread_id = th.id;
  def.input_text = "ping";
  schedule s = t.create(def);
  t.fire_next(s.id);
  auto h = t.history(s.id);
  REQUIRE(h.size() == 1);
  CHECK(h[0].thread_id == th.id);
  auto log = t.settled(th.id, 1);
  CHECK(count_signal(log, "thread.start", h[0].run_id) == 1);

  REQUIRE(t.rt().delete_thread(th.id).is_ok());
  int64_t due = t.get(s.id).next_fire_at_ms;
  t.clock.set(due);
  CHECK(t.fire() == 0);
  h = t.history(s.id);
  REQUIRE(h.size() == 2);
  CHECK(h[0].outcome == firing_outcome::failed);
  CHECK(h[0].scheduled_at_ms == due);
  CHECK(h[0].reason.find("not_found") != std::string::npos);
  schedule after = t.get(s.id);
  CHECK(after.fire_count == 1);  // deliveries only
  CHECK(after.next_fire_at_ms == due + 60000);
}

TEST_CASE("schedules refuse unknown agents and other agents' threads", "[scheduler]") {
  sched_fixture t{utc_ms(2026, 5, 1)};
  t.f->agent("b", "");
  manifest other = t.f->thread("b");
  schedule s = interval(60000);
  s.agent_id = "nobody";
  s.input_text = "x";
  status c = t.rt().create_schedule(s);
  CHECK(c.code() == errc::not_found);
  CHECK(c.field() == "agent_id");
  s.agent_id = "a";
  s.thread_id = other.id;
  c = t.rt().create_schedule(s);
  CHECK(c.code() == errc::invalid_input);
  CHECK(c.field() == "thread_id");
  s.thread_id = "th_missing";
  c = t.rt().create_schedule(s);
  CHECK(c.code() == errc::not_found);
  CHECK(c.field() == "thread_id");
  s.thread_id.clear();
  s.id = "fixed-id";
  REQUIRE(t.rt().create_schedule(s).is_ok());
  CHECK(t.rt().create_schedule(s).code() == errc::conflict);
}

TEST_CASE("pause and resume: missed while paused are skipped", "[scheduler]") {
  int64_t t0 = utc_ms(2026, 5, 1);
  sched_fixture t{t0};
  schedule s = t.create(interval(60000));
  schedule p;
  REQUIRE(t.rt().pause_schedule(s.id, &p).is_ok());
  CHECK(p.paused);
  t.clock.set(t0 + 10 * 60000 + 30000);
  CHECK(t.fire() == 0);
  schedule r;
  REQUIRE(t.rt().resume_schedule(s.id, &r).is_ok());
  CHECK(!r.paused);
  CHECK(r.next_fire_at_ms == t0 + 11 * 60000);  // the next due time from now, on the anchor's grid
  CHECK(t.history(s.id).empty());
  CHECK(t.fire_next(s.id) == t0 + 11 * 60000);
}

TEST_CASE("preview lists the next fire times", "[scheduler]") {
  sched_fixture t{utc_ms(2026, 5, 1, 10, 30)};
  schedule s = t.create(cron("0 * * * *"));
  std::vector<int64_t> p;
  REQUIRE(t.rt().preview_schedule(s.id, 3, &p).is_ok());
  CHECK(p == std::vector<int64_t>{utc_ms(2026, 5, 1, 11), utc_ms(2026, 5, 1, 12), utc_ms(2026, 5, 1, 13)});
  status big = t.rt().preview_schedule(s.id, schedule_preview_max + 1, &p);
  CHECK(big.limit() == "schedule_preview_max");
  CHECK(t.rt().preview_schedule("sc_none", 3, &p).code() == errc::not_found);
}

TEST_CASE("history pages newest first and keeps the newest schedule_history_max", "[scheduler]") {
  int64_t t0 = utc_ms(2026, 5, 1);
  const int64_t grace = 1000;
  sched_fixture t{t0, grace};
  schedule s = t.create(interval(1000));
  // Each step lands past the grace: one `skipped` row per call, no thread made.
  const uint64_t rows = schedule_history_max + 5;
  for (uint64_t i = 0; i < rows; ++i) {
    t.clock.set(t.get(s.id).next_fire_at_ms + grace + 1);
    REQUIRE(t.fire() == 0);
  }
  std::vector<schedule_firing> all, page;
  uint64_t before = 0, next = 0;
  do {
    REQUIRE(t.rt().schedule_history(s.id, before, 300, &page, &next).is_ok());
    all.insert(all.end(), page.begin(), page.end());
    before = next;
  } while (next != 0);
  REQUIRE(all.size() == schedule_history_max);
  CHECK(all.front().seq == rows);
  CHECK(all.back().seq == rows - schedule_history_max + 1);
  for (size_t i = 1; i < all.size(); ++i) CHECK(all[i].seq + 1 == all[i - 1].seq);
  CHECK(all.front().outcome == firing_outcome::skipped);
  CHECK(all.front().missed == 2);
}

TEST_CASE("missed firings across a close: skip and run_once", "[scheduler]") {
  int64_t t0 = utc_ms(2026, 5, 1);
  sched_fixture t{t0};
  schedule skip_def = interval(60000);
  skip_def.missed = missed_policy::skip;
  schedule once_def = interval(60000);
  once_def.missed = missed_policy::run_once;
  schedule skip = t.create(skip_def), run_once = t.create(once_def);
  t.reopen();
  t.clock.set(t0 + 10 * 60000 + 30000);  // ten due times passed while closed
  t.reopen();
  CHECK(t.fire() == 1);  // run_once only
  auto hs = t.history(skip.id);
  REQUIRE(hs.size() == 1);
  CHECK(hs[0].outcome == firing_outcome::skipped);
  CHECK(hs[0].missed == 10);
  CHECK(t.get(skip.id).next_fire_at_ms == t0 + 11 * 60000);
  CHECK(t.get(skip.id).fire_count == 0);
  auto ho = t.history(run_once.id);
  REQUIRE(ho.size() == 1);
  CHECK(ho[0].outcome == firing_outcome::fired);
  CHECK(ho[0].scheduled_at_ms == t0 + 10 * 60000);  // the latest missed
  CHECK(t.get(run_once.id).next_fire_at_ms == t0 + 11 * 60000);
  CHECK(check_runs(t.settled(ho[0].thread_id, 1)) == 1);
}

TEST_CASE("deleting a schedule while it fires does not resurrect it", "[scheduler]") {
  int64_t t0 = utc_ms(2026, 5, 1);
  sched_fixture t{t0};
  for (int round = 0; round < 20; ++round) {
    schedule s = t.create(interval(60000));
    t.clock.set(s.next_fire_at_ms);
    std::thread firer([&] { (void)t.rt().fire_due_schedules(nullptr); });
    REQUIRE(t.rt().delete_schedule(s.id).is_ok());
    firer.join();
    schedule gone;
    CHECK(t.rt().get_schedule(s.id, &gone).code() == errc::not_found);
    CHECK(t.history(s.id).empty());
    REQUIRE(t.rt().delete_schedule(s.id).is_ok());  // idempotent
  }
  t.reopen();
  std::vector<schedule> left;
  std::string next;
  REQUIRE(t.rt().list_schedules("", 100, &left, &next).is_ok());
  CHECK(left.empty());
}

TEST_CASE("schedules list by id in pages", "[scheduler]") {
  sched_fixture t{utc_ms(2026, 5, 1)};
  for (int i = 0; i < 5; ++i) {
    schedule s = interval(60000);
    s.id = "s" + std::to_string(i);
    t.create(s);
  }
  std::vector<schedule> page;
  std::string next;
  REQUIRE(t.rt().list_schedules("", 2, &page, &next).is_ok());
  REQUIRE(page.size() == 2);
  CHECK(page[0].id == "s0");
  CHECK(next == "s1");
  REQUIRE(t.rt().list_schedules(next, 10, &page, &next).is_ok());
  REQUIRE(page.size() == 3);
  CHECK(page[0].id == "s2");
  CHECK(next.empty());
}

TEST_CASE("a bound thread that refuses the input gets a failed firing", "[scheduler]") {
  int64_t t0 = utc_ms(2026, 5, 1);
  sched_fixture t{t0};
  t.f->agent("busy", R"({"default":{"stall":true}})", mid_run_policy::reject);
  manifest th = t.f->thread("busy");
  run_input first;
  first.text = "hold the thread";
  std::string first_run;
  REQUIRE(t.rt().submit(th.id, first, &first_run).is_ok());  // its run stalls: the thread stays busy
  schedule def = interval(60000);
  def.agent_id = "busy";
  def.thread_id = th.id;
  schedule s = t.create(def);
  t.clock.set(s.next_fire_at_ms);
  CHECK(t.fire() == 0);
  auto h = t.history(s.id);
  REQUIRE(h.size() == 1);
  CHECK(h[0].outcome == firing_outcome::failed);
  CHECK(h[0].reason.find("reject") != std::string::npos);
  CHECK(t.get(s.id).next_fire_at_ms == s.next_fire_at_ms + 60000);
  // The bound thread's own log says so too: dispatch.failed naming the schedule.
  CHECK(runtime_fixture::eventually([&] {
    std::vector<event> log;
    if (!t.rt().read(th.id, history_view::complete, 1, 0, &log).is_ok()) return false;
    for (const auto& e : log)
      if (e.type == event_type::signal && e.name == "dispatch.failed" && e.json.find(s.id) != std::string::npos &&
          e.json.find("reject") != std::string::npos)
        return true;
    return false;
  }));
  bool cancelled = false;
  REQUIRE(t.rt().cancel(th.id, &cancelled).is_ok());
}

TEST_CASE("a firing past the database's threads_max fails, creates nothing, and the schedule goes on",
          "[scheduler][quota]") {
  int64_t t0 = utc_ms(2026, 5, 1);
  sched_fixture t{t0};
  manifest only = t.f->thread("a");
  log_quota q;
  q.threads_max = 1;
  REQUIRE(t.rt().set_quota(q).is_ok());
  schedule s = t.create(interval(60000));
  t.clock.set(s.next_fire_at_ms);
  CHECK(t.fire() == 0);
  auto h = t.history(s.id);
  REQUIRE(h.size() == 1);
  CHECK(h[0].outcome == firing_outcome::failed);
  CHECK(h[0].reason.find("threads_max") != std::string::npos);
  log_usage u;
  REQUIRE(t.rt().quota_usage(&u).is_ok());
  CHECK(u.threads == 1);
  CHECK(t.get(s.id).next_fire_at_ms == s.next_fire_at_ms + 60000);
  // Room again: the next firing creates its thread.
  q.threads_max = 2;
  REQUIRE(t.rt().set_quota(q).is_ok());
  t.fire_next(s.id);
  REQUIRE(t.rt().quota_usage(&u).is_ok());
  CHECK(u.threads == 2);
}
