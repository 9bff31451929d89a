// TLS between nodes (runtime/cluster/cluster_tls.hpp, cluster_link): three runtimes
// whose certificates one cluster CA signed serve each other's threads over
// CAF's OpenSSL module, links dialed from both ends of a pair; a peer with
// another CA's certificate, or none, gets no link and writes nothing; a node
// going away leaves the others' links whole; each bad file is refused at open,
// naming its setting, before anything is opened.
#include <catch2/catch.hpp>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/io/middleman.hpp>
#include <caf/io/middleman_actor.hpp>
#include <caf/openssl/manager.hpp>
#include <caf/scoped_actor.hpp>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <set>

#include "actors/error.hpp"
#include "runtime/cluster/cluster_link.hpp"
#include "runtime/cluster/cluster_tls.hpp"
#include "tests/runtime/cluster_fixture.hpp"
#include "tests/support/runtime_fixture.hpp"
#include "tests/support/tls_cert.hpp"

using namespace skein;
using namespace skein::test;
using namespace std::chrono_literals;

namespace {

// What a connection from an actor system of its own to `port` gets: the
// published actor, or why not. Bounded: a refused handshake must not hang.
status connect_from(caf::actor_system& sys, caf::io::middleman_actor mm, uint16_t port, caf::actor* out) {
  caf::scoped_actor self{sys};
  status s = status::unavailable("no answer within 2 s");
  self->request(mm, std::chrono::seconds(2), caf::connect_atom::value, std::string{"127.0.0.1"}, port)
      .receive(
          [&](caf::node_id&, caf::strong_actor_ptr& ptr, std::set<std::string>&) {
            *out = caf::actor_cast<caf::actor>(ptr);
            s = *out ? status::ok() : status::not_found("nothing published");
          },
          [&](caf::error& e) { s = status::unavailable(sys.render(e)); });
  return s;
}

uint64_t stored(runtime& rt) {
  std::vector<cluster_member_state> ms;
  REQUIRE(rt.cluster_members(&ms).is_ok());
  for (const auto& m : ms)
    if (m.self) return m.threads;
  return 0;
}

}  // namespace

TEST_CASE("cluster tls: nodes of one CA serve each other and a peer of another CA or none gets no link") {
  temp_dir certs;
  tls_authority ca{certs.path().string(), "cluster"};
  cluster_fixture f{3, [&](size_t i) { return ca.node("n" + std::to_string(i + 1)); }};
  f.agent(1);  // through n2 to the coordinator n1 and on to n3

  // Threads created through each node land on their owners; runs sent through
  // another node; read through a third; one subscription through a non-owner.
  std::vector<manifest> threads;
  for (size_t k = 0; k < 12; ++k) threads.push_back(f.thread(k % f.n));
  std::set<size_t> owners;
  std::map<std::string, uint64_t> last_seq;
  for (size_t k = 0; k < threads.size(); ++k) {
    const std::string& id = threads[k].id;
    owners.insert(f.owner(id));
    run_result r = f.run((k + 1) % f.n, id, "question " + std::to_string(k));
    CHECK(r.text == "done");
    std::vector<event> ev;
    REQUIRE(f.nodes[(k + 2) % f.n]->read(id, history_view::complete, 1, 0, &ev).is_ok());
    REQUIRE(!ev.empty());
    for (size_t j = 0; j < ev.size(); ++j) CHECK(ev[j].seq == j + 1);
    CHECK(ev.size() == r.last_seq);
    last_seq[id] = r.last_seq;
  }
  CHECK(owners.size() == f.n);
  {
    const std::string& id = threads[0].id;
    size_t via = (f.owner(id) + 1) % f.n;
    std::mutex mu;
    std::condition_variable cv;
    std::vector<uint64_t> seen;
    event_sink sink;
    sink.on_event_json = [&](uint64_t seq, event_type, const std::string&) {
      std::lock_guard lock{mu};
      seen.push_back(seq);
      cv.notify_all();
    };
    uint64_t sub = 0;
    REQUIRE(f.nodes[via]->subscribe(id, 1, sink, &sub).is_ok());
    std::unique_lock lock{mu};
    CHECK(cv.wait_for(lock, 10s, [&] { return seen.size() >= 2; }));
    lock.unlock();
    REQUIRE(f.nodes[via]->unsubscribe(sub).is_ok());
    CHECK(seen.front() == 1);
  }
  std::vector<cluster_member_state> ms;
  REQUIRE(f.nodes[0]->cluster_members(&ms).is_ok());
  uint64_t total = 0;
  for (const auto& m : ms) {
    INFO(m.id << " " << m.state << " " << m.last_error);
    CHECK((m.self ? m.state == "self" : m.state == "up"));
    total += m.threads;
  }
  CHECK(total == threads.size());

  // Outsiders, against each node's link port: a plain TCP peer, and a TLS peer
  // whose certificate another CA signed. Neither gets the edge; nothing changes.
  uint64_t before[3];
  for (size_t i = 0; i < f.n; ++i) before[i] = stored(*f.nodes[i]);
  {
    caf::actor_system_config cfg;
    prepare_cluster_config(cfg);
    caf::actor_system sys{cfg};
    for (size_t i = 0; i < f.n; ++i) {
      caf::actor edge;
      status s = connect_from(sys, sys.middleman().actor_handle(), f.members[i].port, &edge);
      INFO("plain TCP to " << f.members[i].id << ": " << s.to_string());
      CHECK(!s);
    }
  }
  {
    temp_dir other_dir;
    tls_authority other{other_dir.path().string(), "impostor"};
    cluster_tls t = other.node("n4");
    REQUIRE(check_cluster_tls(t).is_ok());  // a valid certificate, of another CA
    caf::actor_system_config cfg;
    prepare_cluster_config(cfg, t);
    caf::actor_system sys{cfg};
    for (size_t i = 0; i < f.n; ++i) {
      caf::actor edge;
      status s = connect_from(sys, sys.openssl_manager().actor_handle(), f.members[i].port, &edge);
      INFO("another CA's certificate to " << f.members[i].id << ": " << s.to_string());
      CHECK(!s);
    }
  }
  // A peer with a certificate of the cluster CA gets a link: the CA is the
  // boundary of trust (docs/cluster.md).
  {
    caf::actor_system_config cfg;
    cluster_tls t = ca.node("tool");
    prepare_cluster_config(cfg, t);
    caf::actor_system sys{cfg};
    caf::actor edge;
    status s = connect_from(sys, sys.openssl_manager().actor_handle(), f.members[0].port, &edge);
    INFO(s.to_string());
    CHECK(s.is_ok());
  }
  for (size_t i = 0; i < f.n; ++i) CHECK(stored(*f.nodes[i]) == before[i]);
  // The members still serve each other after the outsiders, every pair.
  for (const auto& t : threads)
    for (size_t via = 0; via < f.n; ++via) {
      manifest m;
      status s = f.nodes[via]->get_thread(t.id, &m);
      INFO("after the outsiders: " << t.id << " via " << f.members[via].id << ": " << s.to_string());
      CHECK(s.is_ok());
      CHECK(m.last_seq == last_seq[t.id]);
    }

  // A node goes away: the links between the others hold. (Before the error
  // queue was emptied before each TLS call — cluster_tls.cpp — the first call
  // between the two others timed out here.) Then it comes back: its links
  // return (it dials n1; n3 redials it after its backoff) and every node
  // serves every thread, each call the first over its link.
  f.close(1);
  for (const auto& t : threads) {
    if (f.owner(t.id) == 1) continue;
    for (size_t via : {size_t{0}, size_t{2}}) {
      manifest m;
      status s = f.nodes[via]->get_thread(t.id, &m);
      INFO(t.id << " via " << f.members[via].id << " with n2 gone: " << s.to_string());
      CHECK(s.is_ok());
      CHECK(m.last_seq == last_seq[t.id]);
    }
  }
  f.open(1);
  for (const auto& t : threads)
    for (size_t via = 0; via < f.n; ++via) {
      manifest m;
      status s;
      bool served = runtime_fixture::eventually([&] { return (s = f.nodes[via]->get_thread(t.id, &m)).is_ok(); }, 10s);
      INFO(t.id << " via " << f.members[via].id << " after n2 returned: " << s.to_string());
      CHECK(served);
      CHECK(m.last_seq == last_seq[t.id]);
    }
}

TEST_CASE("cluster tls: each bad file is refused at open naming its setting and nothing is opened") {
  temp_dir certs;
  tls_authority ca{certs.path().string(), "cluster"};
  temp_dir other_dir;
  tls_authority other{other_dir.path().string(), "other"};
  cluster_fixture f{0};
  f.add_member();
  f.add_member();
  cluster_tls good = ca.node("n1");
  REQUIRE(check_cluster_tls(good).is_ok());

  auto garbage = certs.str("garbage.pem");
  std::ofstream{garbage} << "-----BEGIN CERTIFICATE-----\nnot base64 at all\n-----END CERTIFICATE-----\n";
  auto huge = certs.str("huge.pem");
  std::ofstream{huge} << std::string((1 << 20) + 10, 'A');
  // An encrypted copy of the good key.
  auto encrypted = certs.str("encrypted.key");
  {
    FILE* in = std::fopen(good.key.c_str(), "r");
    EVP_PKEY* k = PEM_read_PrivateKey(in, nullptr, nullptr, nullptr);
    std::fclose(in);
    REQUIRE(k != nullptr);
    FILE* out = std::fopen(encrypted.c_str(), "w");
    REQUIRE(PEM_write_PrivateKey(out, k, EVP_aes_128_cbc(), reinterpret_cast<const unsigned char*>("pw"), 2, nullptr,
                                 nullptr) == 1);
    std::fclose(out);
    EVP_PKEY_free(k);
  }
  cluster_tls second = ca.node("n2");

  struct bad_case {
    const char* what;
    cluster_tls tls;
    const char* field;
    const char* says;
  };
  std::vector<bad_case> cases = {
      {"no key", {good.certificate, "", good.ca}, "cluster_key", "missing"},
      {"no CA", {good.certificate, good.key, ""}, "cluster_ca", "missing"},
      {"no certificate", {"", good.key, good.ca}, "cluster_cert", "missing"},
      {"a certificate file that is not there", {certs.str("absent.crt"), good.key, good.ca}, "cluster_cert",
       "cannot open"},
      {"a CA file of garbage", {good.certificate, good.key, garbage}, "cluster_ca", "no PEM certificate"},
      {"a CA file over 1 MiB", {good.certificate, good.key, huge}, "cluster_ca", "larger than"},
      {"a node certificate as the CA", {good.certificate, good.key, second.certificate}, "cluster_ca", "not a CA"},
      {"a key file holding a certificate", {good.certificate, good.certificate, good.ca}, "cluster_key",
       "no PEM private key"},
      {"an encrypted key", {good.certificate, encrypted, good.ca}, "cluster_key", "encrypted"},
      {"another node's key", {good.certificate, second.key, good.ca}, "cluster_key", "does not match"},
      {"a certificate of another CA", {other.node("n1").certificate, other_dir.str("n1.key"), good.ca}, "cluster_cert",
       "does not verify"},
      {"an expired certificate", ca.node("old", -2 * 86400, -86400), "cluster_cert", "expired"},
      {"a certificate not valid yet", ca.node("early", 86400, 2 * 86400), "cluster_cert", "not yet valid"},
      {"a certificate for servers only", ca.node("server", -3600, 86400, "serverAuth"), "cluster_cert", "client"},
  };
  for (const auto& c : cases) {
    runtime_options o = f.options(0);
    o.cluster.tls = c.tls;
    std::unique_ptr<runtime> rt;
    status s = runtime::open(o, &rt);
    INFO(c.what << ": " << s.to_string());
    CHECK(s.code() == errc::invalid_input);
    CHECK(s.field() == c.field);
    CHECK(s.message().find(c.says) != std::string::npos);
    CHECK(rt == nullptr);
    CHECK(!std::filesystem::exists(f.dirs[0]->str()));  // no database made
  }

  // Members off loopback: only with TLS.
  cluster_options remote;
  remote.node_id = "n1";
  remote.members = {{"n1", "10.0.0.5", 7001}, {"n2", "10.0.0.6", 7001}};
  status plain = check_cluster(remote);
  CHECK(plain.code() == errc::invalid_input);
  CHECK(plain.message().find("loopback") != std::string::npos);
  remote.tls = good;
  CHECK(check_cluster(remote).is_ok());
}
