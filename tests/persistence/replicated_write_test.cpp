// A leader's side of the replicated log (log_options::replicator) on real
// RocksDB: every write's rows of the replicated families handed over split by
// partition before they are written, so that a follower applying the parts
// holds exactly the leader's rows; a refused or uncertain replication writes
// nothing here, and an uncertain one holds its partitions until resumed.
// The replicator is the test's own record of the parts (the JetStream one is
// tested in tests/replication/journal_replicator_test.cpp).
#include <catch2/catch.hpp>
#include <map>

#include "persistence/event_log.hpp"
#include "runtime/model/cluster.hpp"
#include "tests/support/log_fixtures.hpp"
#include "tests/support/temp_dir.hpp"

using namespace skein;
using namespace skein::test;

namespace {

// Keeps each partition's parts as a replicated log would, numbering them from 1.
class recorded_log : public log_replicator {
 public:
  uint32_t partition_of(std::string_view route) const override {
    uint32_t h = 0;
    for (char c : cluster_key(route)) h = h * 31 + static_cast<unsigned char>(c);
    return h % 4;
  }
  status replicate(std::vector<replicated_part>& parts) override {
    ++calls;
    for (size_t i = 0; i < parts.size(); ++i) {
      if (!answer.is_ok() && i >= stored_before_answer) return answer;
      parts[i].seq = parts_of[parts[i].partition].size() + 1;
      parts_of[parts[i].partition].push_back(parts[i]);
    }
    return answer;
  }

  std::map<uint32_t, std::vector<replicated_part>> parts_of;
  status answer = status::ok();
  size_t stored_before_answer = 0;  // parts a refused write stores before it is refused
  size_t calls = 0;
};

std::unique_ptr<event_log> open_leader(const std::string& path, std::shared_ptr<recorded_log> rec) {
  log_options o;
  o.path = path;
  o.replicator = std::move(rec);
  return open_log(o);
}

void check_same_rows(const std::vector<log_row>& a, const std::vector<log_row>& b) {
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    INFO("row " << i << " key " << a[i].key);
    CHECK(a[i].family == b[i].family);
    CHECK(a[i].key == b[i].key);
    CHECK(a[i].value == b[i].value);
  }
}

}  // namespace

TEST_CASE("replicated write: a follower applying a leader's parts holds exactly the leader's rows") {
  temp_dir leader_dir, follower_dir;
  auto rec = std::make_shared<recorded_log>();
  auto leader = open_leader(leader_dir.str(), rec);

  // One group: two roots, a child of the first, a schedule alone, an effect write.
  tick t1 = make_tick("t1", 1, 3);
  t1.manifest.tags = {"red", "blue"};
  t1.manifest.task_id = "task-1";
  tick t2 = make_tick("t2", 1, 2);
  tick child = make_tick("t1.1", 1, 2);
  child.manifest.parent = parent_kind::thread;
  child.manifest.parent_id = "t1";
  tick sched;
  REQUIRE(schedule_rows_of(hourly_schedule("s9", "agent"), nullptr, &sched.side_rows).is_ok());
  effect_write w;
  w.effect = "titles";
  w.thread_id = "t1";
  w.cursor = 2;
  tick* group[] = {&t1, &t2, &child, &sched};
  status results[4];
  effect_write* effects[] = {&w};
  status effect_results[1];
  leader->commit_group(group, results, effects, effect_results);
  for (const auto& r : results) REQUIRE(r.is_ok());
  REQUIRE(effect_results[0].is_ok());
  CHECK(rec->calls == 1);  // one write, one replication of all its partitions

  tick more = make_tick("t1", 4, 2);
  more.manifest.tags = {"green"};  // index entries erased and put
  REQUIRE(leader->commit(more).is_ok());
  REQUIRE(leader->erase_thread("t2").is_ok());  // range erasures

  // The child's rows travel with its root's partition.
  const uint32_t p1 = rec->partition_of("t1");
  for (const auto& [p, parts] : rec->parts_of)
    for (const auto& part : parts)
      for (const auto& row : part.rows)
        if (row.key.find("t1.1") != std::string::npos) CHECK(p == p1);

  auto follower = open_log(follower_dir.str());
  for (const auto& [p, parts] : rec->parts_of) {
    for (const auto& part : parts) {
      bool applied = false;
      REQUIRE(follower->apply_replicated(p, part.seq, part.rows, &applied).is_ok());
      CHECK(applied);
    }
    uint64_t leader_seq = 0, follower_seq = 0;
    REQUIRE(leader->replicated_seq(p, &leader_seq).is_ok());
    REQUIRE(follower->replicated_seq(p, &follower_seq).is_ok());
    CHECK(leader_seq == parts.size());
    CHECK(follower_seq == parts.size());
  }
  for (std::string id : {"t1", "t1.1"}) {
    INFO("thread " << id);
    std::vector<log_row> mine, theirs;
    REQUIRE(leader->thread_rows(id, &mine).is_ok());
    REQUIRE(follower->thread_rows(id, &theirs).is_ok());
    check_same_rows(mine, theirs);
  }
  CHECK(thread_keys(*follower, "t2") == 0);
  std::vector<log_row> mine, theirs;
  REQUIRE(leader->schedule_rows("s9", &mine).is_ok());
  REQUIRE(follower->schedule_rows("s9", &theirs).is_ok());
  check_same_rows(mine, theirs);
  REQUIRE(leader->claim_rows(&mine).is_ok());
  REQUIRE(follower->claim_rows(&theirs).is_ok());
  REQUIRE(mine.size() == 1);
  check_same_rows(mine, theirs);
  uint64_t cursor = 0;
  REQUIRE(follower->read_effect_cursor("titles", "t1", &cursor).is_ok());
  CHECK(cursor == 2);

  // An agent is the cluster's, not a partition's: it stays here.
  const size_t calls = rec->calls;
  agent_config a;
  a.id = "agent-2";
  REQUIRE(leader->put_agent(a).is_ok());
  CHECK(rec->calls == calls);
}

TEST_CASE("replicated write: a refused replication writes nothing here, an uncertain one holds its partitions") {
  temp_dir dir;
  auto rec = std::make_shared<recorded_log>();
  auto leader = open_leader(dir.str(), rec);
  tick first = make_tick("t1", 1, 2);
  REQUIRE(leader->commit(first).is_ok());

  // A thread of another partition than t1's.
  std::string other;
  for (char c = 'a'; other.empty(); ++c)
    if (rec->partition_of(std::string("u") + c) != rec->partition_of("t1")) other = std::string("u") + c;
  // t1's third event, refused with `answer`: nothing of it is written here.
  auto refused = [&](status answer) {
    rec->answer = std::move(answer);
    tick next = make_tick("t1", 3, 1);
    status s = leader->commit(next);
    manifest m;
    REQUIRE(leader->read_manifest("t1", &m).is_ok());
    CHECK(m.last_seq == 2);
    rec->answer = status::ok();
    return s.code();
  };
  SECTION("conflict: nothing stored anywhere (unavailable to the caller), the next write goes on") {
    CHECK(refused(status::conflict("another writer leads the partition")) == errc::unavailable);
    CHECK(leader->unsettled_partitions().empty());
    tick again = make_tick("t1", 3, 1);
    REQUIRE(leader->commit(again).is_ok());
  }
  SECTION("unavailable: refused until the partition is resumed; the others go on") {
    CHECK(refused(status::unavailable("publish timed out")) == errc::unavailable);
    const uint32_t p = rec->partition_of("t1");
    CHECK(leader->unsettled_partitions() == std::vector<uint32_t>{p});
    const size_t calls = rec->calls;
    tick held = make_tick("t1", 3, 1);
    status s = leader->commit(held);
    CHECK(s.code() == errc::unavailable);
    CHECK(s.message().find("partition " + std::to_string(p)) != std::string::npos);
    CHECK(rec->calls == calls);  // refused before any publish
    // A thread of another partition is written.
    tick elsewhere = make_tick(other, 1, 1);
    REQUIRE(leader->commit(elsewhere).is_ok());
    leader->resume_partition(p);
    tick resumed = make_tick("t1", 3, 1);
    REQUIRE(leader->commit(resumed).is_ok());
  }
  SECTION("a write refused after one of its partitions stored its part holds that partition alone") {
    tick a = make_tick("t1", 3, 1), b = make_tick(other, 1, 1);
    tick* group[] = {&a, &b};
    status results[2];
    rec->answer = status::conflict("the second partition is led elsewhere");
    rec->stored_before_answer = 1;
    leader->commit_group(group, results);
    CHECK(results[0].code() == errc::unavailable);
    CHECK(results[1].code() == errc::unavailable);
    CHECK(leader->unsettled_partitions() == std::vector<uint32_t>{rec->partition_of("t1")});
    CHECK(thread_keys(*leader, other) == 0);
  }
  SECTION("a row of no thread or schedule is refused, not written unreplicated") {
    // The static cluster's claim handoff names no thread of its own.
    std::vector<log_row> claims{{3, "c/task/x", "t1"}};
    status s = leader->put_claims(claims);
    CHECK(s.code() == errc::invalid_input);
    CHECK(s.message().find("no thread or schedule") != std::string::npos);
    std::string holder;
    CHECK(leader->find_claim("task", "x", &holder).code() == errc::not_found);
  }
}

