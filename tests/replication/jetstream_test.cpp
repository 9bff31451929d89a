// skein's JetStream client (runtime/replication/jetstream.hpp) against real
// nats-server processes on loopback: fenced publishes, ordered followers and
// compare-and-set buckets on one server; then a three-server cluster at
// replicas 3 losing one server (service goes on) and two (calls answer
// `unavailable` within the timeout, and resume once they are back).
#include <catch2/catch.hpp>
#include <atomic>
#include <algorithm>
#include <condition_variable>
#include <map>
#include <mutex>

#include "tests/support/nats_cluster.hpp"
#include "tests/support/tls_cert.hpp"

using namespace skein;
using namespace skein::replication;
using namespace std::chrono_literals;
using skein::test::nats_cluster;
using skein::test::until_available;

namespace {

// What a follower or watcher handed over, with a bounded wait for more.
template <class T>
struct collected {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<T> items;

  void add(const T& x) {
    std::lock_guard<std::mutex> lock{mu};
    items.push_back(x);
    cv.notify_all();
  }
  bool wait_for(size_t n, std::chrono::milliseconds limit = 10s) {
    std::unique_lock<std::mutex> lock{mu};
    return cv.wait_for(lock, limit, [&] { return items.size() >= n; });
  }
  std::vector<T> snapshot() {
    std::lock_guard<std::mutex> lock{mu};
    return items;
  }
};

bool have_nats() {
  if (!nats_cluster::binary().empty()) return true;
  WARN("nats-server is not installed (packages.txt lists it): the JetStream tests did not run");
  return false;
}

}  // namespace

TEST_CASE("jetstream: a publish is stored only at the subject sequence its writer expects") {
  if (!have_nats()) return;
  nats_cluster nats{1};
  auto js = nats.connect();
  REQUIRE(js->ensure_stream({"log", {"log.>"}, 1}).is_ok());
  REQUIRE(js->ensure_stream({"log", {"log.>"}, 1}).is_ok());  // again: the same stream, no error

  uint64_t first = 0, second = 0, other = 0, seq = 0;
  REQUIRE(js->publish("log.p1", "a", 0, &first).is_ok());
  // A second writer that also believes the subject empty is fenced.
  status s = js->publish("log.p1", "rival", 0, &seq);
  CHECK(s.code() == errc::conflict);
  // Another subject has its own sequence: its first publish expects 0.
  REQUIRE(js->publish("log.p2", "x", 0, &other).is_ok());
  REQUIRE(js->publish("log.p1", "b", first, &second).is_ok());
  CHECK(second > other);
  // A writer that last saw `first` (a deposed leader) is refused and stores nothing.
  s = js->publish("log.p1", "stale", first, &seq);
  CHECK(s.code() == errc::conflict);
  INFO(s.to_string());
  CHECK(s.message().find("10071") != std::string::npos);

  stream_message last;
  REQUIRE(js->last_on_subject("log", "log.p1", &last).is_ok());
  CHECK(last.seq == second);
  CHECK(last.data == "b");
  CHECK(js->last_on_subject("log", "log.none", &last).code() == errc::not_found);
  CHECK(js->last_on_subject("nostream", "log.p1", &last).code() == errc::not_found);
}

TEST_CASE("jetstream: a follower gets one partition's messages from a sequence on, in order, then live") {
  if (!have_nats()) return;
  nats_cluster nats{1};
  auto js = nats.connect();
  REQUIRE(js->ensure_stream({"log", {"log.>"}, 1}).is_ok());
  std::map<std::string, uint64_t> last;
  std::vector<uint64_t> p1;
  for (int i = 0; i < 10; ++i) {
    std::string subject = i % 3 == 0 ? "log.p2" : "log.p1";
    uint64_t seq = 0;
    REQUIRE(js->publish(subject, "m" + std::to_string(i), last[subject], &seq).is_ok());
    last[subject] = seq;
    if (subject == "log.p1") p1.push_back(seq);
  }
  collected<stream_message> got;
  std::unique_ptr<subscription> sub;
  REQUIRE(js->follow("log", "log.p1", p1[2], [&](const stream_message& m) { got.add(m); }, &sub).is_ok());
  REQUIRE(got.wait_for(p1.size() - 2));
  // Live: one more after the backlog.
  uint64_t seq = 0;
  REQUIRE(js->publish("log.p1", "live", last["log.p1"], &seq).is_ok());
  REQUIRE(got.wait_for(p1.size() - 1));
  auto items = got.snapshot();
  REQUIRE(items.size() == p1.size() - 1);
  for (size_t i = 0; i + 1 < items.size(); ++i) {
    CHECK(items[i].seq == p1[i + 2]);
    CHECK(items[i].subject == "log.p1");
  }
  CHECK(items.back().seq == seq);
  CHECK(items.back().data == "live");
  sub.reset();  // stops; no callback after this
  REQUIRE(js->publish("log.p1", "after", seq, &seq).is_ok());
  CHECK_FALSE(got.wait_for(items.size() + 1, 300ms));
}

TEST_CASE("jetstream: a bucket's keys change only at the revision their writer read") {
  if (!have_nats()) return;
  nats_cluster nats{1};
  auto js = nats.connect();
  REQUIRE(js->ensure_bucket({"leases", 1, 1}).is_ok());
  REQUIRE(js->ensure_bucket({"leases", 1, 1}).is_ok());

  collected<kv_entry> seen;
  std::unique_ptr<subscription> watch;
  REQUIRE(js->kv_watch("leases", ">", [&](const kv_entry& e) { seen.add(e); }, &watch).is_ok());

  uint64_t r1 = 0, r2 = 0, r = 0;
  REQUIRE(js->kv_create("leases", "p.7", "n1:1", &r1).is_ok());
  CHECK(js->kv_create("leases", "p.7", "n2:1", &r).code() == errc::conflict);  // taken
  REQUIRE(js->kv_update("leases", "p.7", "n1:1 renewed", r1, &r2).is_ok());
  CHECK(r2 > r1);
  // A writer that read r1 (the lease before its renewal) cannot take it.
  CHECK(js->kv_update("leases", "p.7", "n2:2", r1, &r).code() == errc::conflict);
  kv_entry e;
  REQUIRE(js->kv_get("leases", "p.7", &e).is_ok());
  CHECK(e.value == "n1:1 renewed");
  CHECK(e.revision == r2);
  REQUIRE(js->kv_put("leases", "p.8", "n3:1", &r).is_ok());
  std::vector<std::string> keys;
  REQUIRE(js->kv_keys("leases", &keys).is_ok());
  std::sort(keys.begin(), keys.end());
  CHECK(keys == std::vector<std::string>{"p.7", "p.8"});
  REQUIRE(js->kv_delete("leases", "p.7").is_ok());
  CHECK(js->kv_get("leases", "p.7", &e).code() == errc::not_found);
  REQUIRE(js->kv_create("leases", "p.7", "n2:2", &r).is_ok());  // a deleted key can be taken again
  CHECK(js->kv_get("nobucket", "p.7", &e).code() == errc::not_found);

  // The watcher saw each change, in revision order, the delete as a marker.
  bool all = seen.wait_for(5);
  auto items = seen.snapshot();
  for (const auto& i : items) UNSCOPED_INFO("saw " << i.key << " rev " << i.revision << (i.deleted ? " deleted" : " ") << i.value);
  REQUIRE(all);
  REQUIRE(items.size() == 5);
  CHECK(items[0].revision == r1);
  CHECK(items[1].value == "n1:1 renewed");
  CHECK(items[2].key == "p.8");
  CHECK(items[3].deleted);
  CHECK(items[4].value == "n2:2");
  for (size_t i = 1; i < items.size(); ++i) CHECK(items[i].revision > items[i - 1].revision);
}

TEST_CASE("jetstream: a three-server cluster at replicas 3 serves with one server down, not with two") {
  if (!have_nats()) return;
  nats_cluster nats{3};
  auto js = nats.connect(1500ms);
  REQUIRE(js->ensure_stream({"log", {"log.>"}, 3}).is_ok());
  REQUIRE(js->ensure_bucket({"members", 3, 1}).is_ok());
  uint64_t last = 0;
  REQUIRE(js->publish("log.p1", "before", 0, &last).is_ok());
  // Each stream's copies are formed and current before a server goes: a
  // stream created a moment before one of its peers is lost may stay without
  // a leader until it returns (seen with nats-server 2.9: a bucket answered
  // "no responders" for 20 s).
  for (const char* stream : {"log", "KV_members"}) {
    INFO(stream);
    stream_health h;
    auto formed = until_available(20s, [&] {
      status s = js->health(stream, &h);
      if (s && (h.leader.empty() || h.current < 2)) return status::unavailable("forming");
      return s;
    });
    REQUIRE(formed.is_ok());
  }

  // A bounded wait for a call to succeed again (the client reconnects and the
  // stream elects a leader on its own); each try is itself bounded.
  auto publish_within = [&](const std::string& data, std::chrono::seconds limit) {
    auto deadline = std::chrono::steady_clock::now() + limit;
    status s;
    for (;;) {
      uint64_t seq = 0;
      s = js->publish("log.p1", data, last, &seq);
      if (s.is_ok()) {
        last = seq;
        return s;
      }
      if (s.code() == errc::conflict) {  // a timed-out try was stored after all: read where the subject is
        stream_message m;
        if (js->last_on_subject("log", "log.p1", &m).is_ok()) last = m.seq;
        if (m.data == data) return status::ok();
      }
      if (std::chrono::steady_clock::now() > deadline) return s;
      std::this_thread::sleep_for(50ms);  // between bounded tries ("no responders" answers at once)
    }
  };

  nats.kill(0);
  INFO("one server down");
  REQUIRE(publish_within("one down", 20s).is_ok());
  // The bucket's own stream may have had its leader there: it elects another.
  uint64_t rev = 0;
  status put = until_available(20s, [&] { return js->kv_put("members", "n1", "alive", &rev); });
  INFO(put.to_string());
  if (!put) UNSCOPED_INFO(nats.logs_tail());
  CHECK(put.is_ok());

  nats.kill(1);
  // No quorum: an unavailable answer within the request timeout (plus slack),
  // never a hang; and never an acknowledgement.
  for (int i = 0; i < 3; ++i) {
    auto start = std::chrono::steady_clock::now();
    uint64_t seq = 0;
    status s = js->publish("log.p1", "no quorum", last, &seq);
    auto took = std::chrono::steady_clock::now() - start;
    INFO(s.to_string());
    CHECK(s.code() == errc::unavailable);
    CHECK(took < 4s);
  }

  nats.restart(0);
  nats.restart(1);
  REQUIRE(publish_within("back", 60s).is_ok());
  stream_message m;
  status read = until_available(20s, [&] { return js->last_on_subject("log", "log.p1", &m); });
  INFO(read.to_string());
  REQUIRE(read.is_ok());
  CHECK(m.data == "back");
  CHECK(m.seq == last);
}

TEST_CASE("jetstream: a bucket's ttl drops a key that is not put again, and keeps one that is") {
  if (!have_nats()) return;
  nats_cluster nats{1};
  auto js = nats.connect();
  REQUIRE(js->ensure_bucket({"short", 1, 1, 400ms}).is_ok());
  REQUIRE(js->kv_put("short", "gone", "x", nullptr).is_ok());
  // "kept" is put again every 100 ms; "gone" ages out (bounded wait).
  kv_entry e;
  auto deadline = std::chrono::steady_clock::now() + 10s;
  bool dropped = false;
  while (!dropped && std::chrono::steady_clock::now() < deadline) {
    REQUIRE(js->kv_put("short", "kept", "y", nullptr).is_ok());
    dropped = js->kv_get("short", "gone", &e).code() == errc::not_found;
    std::this_thread::sleep_for(100ms);  // the renewal period under test
  }
  CHECK(dropped);
  CHECK(js->kv_get("short", "kept", &e).is_ok());
}

TEST_CASE("jetstream: a server asking for TLS and a password takes a client with both, and no other") {
  if (!have_nats()) return;
  skein::test::temp_dir certs;
  auto ca = skein::test::make_test_ca();
  auto server = skein::test::make_server_cert(ca, "IP:127.0.0.1,DNS:localhost");
  nats_cluster::security sec;
  sec.ca_file = (certs.path() / "ca.pem").string();
  sec.cert_file = (certs.path() / "server.pem").string();
  sec.key_file = (certs.path() / "server.key").string();
  skein::test::write_text_file(sec.ca_file, ca.cert);
  skein::test::write_text_file(sec.cert_file, server.cert);
  skein::test::write_text_file(sec.key_file, server.key);
  sec.user = "skein-node";
  sec.password = "s3cret-but-long-enough";
  nats_cluster nats{1, sec};

  auto js = nats.connect();  // TLS, the CA, the password
  REQUIRE(js->ensure_stream({"log", {"log.>"}, 1}).is_ok());
  uint64_t seq = 0;
  REQUIRE(js->publish("log.p1", "over tls", 0, &seq).is_ok());

  auto refused = [&](replication::nats_options o, const char* what) {
    INFO(what);
    o.connect_timeout = 1000ms;
    std::unique_ptr<jetstream> other;
    status s = jetstream::connect(o, &other);
    INFO(s.to_string());
    CHECK_FALSE(s.is_ok());
    CHECK(other == nullptr);
  };
  auto plain = nats.client_options();
  plain.ca_file.clear();
  refused(plain, "no TLS");
  auto no_password = nats.client_options();
  no_password.user.clear();
  no_password.password.clear();
  refused(no_password, "no password");
  auto wrong = nats.client_options();
  wrong.password = "guess";
  refused(wrong, "a wrong password");
  auto other_ca = nats.client_options();
  auto stranger = skein::test::make_test_ca("another CA");
  other_ca.ca_file = (certs.path() / "other.pem").string();
  skein::test::write_text_file(other_ca.ca_file, stranger.cert);
  refused(other_ca, "a CA that did not sign the server");
  // Nothing a refused client tried reached the stream.
  stream_message last;
  REQUIRE(js->last_on_subject("log", "log.p1", &last).is_ok());
  CHECK(last.seq == seq);
}
