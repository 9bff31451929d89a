// A partition leader's appends (runtime/replication/partition_writer.hpp) on
// real nats-server processes: fenced against a newer leader, sent again under
// one id after a timeout and stored once, and, through the loss of the
// stream's leader server mid-load, every acknowledged batch present exactly
// once, in order.
#include <catch2/catch.hpp>
#include <atomic>
#include <condition_variable>
#include <map>
#include <mutex>
#include <set>

#include "runtime/replication/partition_writer.hpp"
#include "tests/support/eventually.hpp"
#include "tests/support/nats_cluster.hpp"

using namespace skein;
using namespace skein::replication;
using namespace std::chrono_literals;
using skein::test::nats_cluster;

TEST_CASE("partition writer: appends in order, and a newer leader's write deposes the old one for good") {
  if (nats_cluster::binary().empty()) {
    WARN("nats-server is not installed (packages.txt lists it): the partition writer tests did not run");
    return;
  }
  nats_cluster nats{1};
  auto js = nats.connect();
  REQUIRE(js->ensure_stream({"log", {"log.>"}, 1}).is_ok());
  partition_writer old_leader{*js, "log", "log.p3", "n1.1"};
  uint64_t a = 0, b = 0;
  REQUIRE(old_leader.append("b1", &a).is_ok());
  REQUIRE(old_leader.append("b2", &b).is_ok());
  CHECK(b > a);

  partition_writer new_leader{*js, "log", "log.p3", "n2.2"};
  REQUIRE(new_leader.open().is_ok());
  CHECK(new_leader.last() == b);
  uint64_t c = 0;
  REQUIRE(new_leader.append("b3 by n2", &c).is_ok());

  uint64_t x = 0;
  CHECK(old_leader.append("b3 by n1", &x).code() == errc::conflict);
  CHECK(old_leader.deposed());
  CHECK(old_leader.append("b4 by n1", &x).code() == errc::conflict);  // stays deposed
  stream_message last;
  REQUIRE(js->last_on_subject("log", "log.p3", &last).is_ok());
  CHECK(last.seq == c);
  CHECK(last.data == "b3 by n2");
  CHECK(last.msg_id == "n2.2.1");

  // The same id again (a resend after a timeout) stores nothing and answers the first sequence.
  stream_health before, after;
  REQUIRE(js->health("log", &before).is_ok());
  uint64_t again = 0;
  bool duplicate = false;
  REQUIRE(js->publish("log.p3", "b3 by n2", b, "n2.2.1", &again, &duplicate).is_ok());
  CHECK(duplicate);
  CHECK(again == c);
  REQUIRE(js->health("log", &after).is_ok());
  CHECK(after.messages == before.messages);
}

TEST_CASE("partition writer: through the loss of the stream's leader server, every acknowledged batch is there once") {
  if (nats_cluster::binary().empty()) return;
  nats_cluster nats{3};
  auto js = nats.connect(1000ms);
  REQUIRE(js->ensure_stream({"log", {"log.>"}, 3}).is_ok());
  // Its copies are formed and current before the kill (a replica reports
  // current once it has caught up with a first message).
  uint64_t probe = 0;
  REQUIRE(js->publish("log.probe", "p", 0, &probe).is_ok());
  stream_health h;
  auto formed = [&] { return js->health("log", &h).is_ok() && !h.leader.empty() && h.current == 2; };
  REQUIRE(skein::test::eventually(formed, 20s));

  partition_writer w{*js, "log", "log.p9", "n1.1", 10s};
  std::mutex mu;
  std::set<int> acked, failed;
  std::vector<std::string> errors;  // what the failed appends said
  std::atomic<bool> stop{false};
  std::atomic<int> appended{0};
  std::thread writer([&] {
    for (int n = 1; !stop.load() && !w.deposed(); ++n) {
      uint64_t seq = 0;
      status s = w.append("batch " + std::to_string(n), &seq);
      std::lock_guard<std::mutex> lock{mu};
      (s ? acked : failed).insert(n);
      if (!s) errors.push_back(s.to_string());
      appended.fetch_add(1);
    }
  });
  auto wait_appends = [&](int more) {
    int target = appended.load() + more;
    return skein::test::eventually([&] { return appended.load() >= target; });
  };
  // Acknowledged ones: service, not just attempts (a failed one is quick
  // while the stream has no leader, and a slow machine's election is long).
  auto acked_count = [&] {
    std::lock_guard<std::mutex> lock{mu};
    return acked.size();
  };
  auto wait_acked = [&](size_t more) {
    size_t target = acked_count() + more;
    return skein::test::eventually([&] { return acked_count() >= target; }, 60s);
  };

  REQUIRE(wait_acked(50));
  // Kill the server that leads the stream, mid-load; later bring it back.
  REQUIRE(js->health("log", &h).is_ok());
  int leader = h.leader.empty() ? 0 : std::stoi(h.leader.substr(1));
  INFO("stream leader was s" << leader);
  nats.kill(leader);
  CHECK(wait_appends(50));
  nats.restart(leader);
  CHECK(wait_acked(50));
  stop = true;
  writer.join();
  CHECK_FALSE(w.deposed());

  // Read the subject back whole.
  std::mutex got_mu;
  std::condition_variable got_cv;
  std::vector<stream_message> got;
  std::unique_ptr<subscription> sub;
  status followed = skein::test::until_available(20s, [&] {  // the returned server rejoins
    return js->follow("log", "log.p9", 1, [&](const stream_message& m) {
      std::lock_guard<std::mutex> lock{got_mu};
      got.push_back(m);
      got_cv.notify_all();
    }, &sub);
  });
  INFO(followed.to_string());
  REQUIRE(followed.is_ok());
  {
    std::unique_lock<std::mutex> lock{got_mu};
    got_cv.wait_for(lock, 20s, [&] { return !got.empty() && got.back().seq == w.last(); });
  }
  sub.reset();
  std::map<int, int> copies;
  int previous = 0;
  for (const auto& m : got) {
    int n = std::stoi(m.data.substr(6));
    ++copies[n];
    CHECK(n > previous);  // in order, never twice
    previous = n;
  }
  INFO("acked " << acked.size() << ", failed " << failed.size() << ", stored " << got.size());
  for (const auto& e : errors) WARN("append failed: " << e);
  for (int n : acked) {
    INFO("batch " << n);
    CHECK(copies[n] == 1);  // acknowledged: there, once
  }
  for (const auto& [n, count] : copies) CHECK((acked.count(n) == 1 || failed.count(n) == 1));
  CHECK(acked.size() >= 100);
}
