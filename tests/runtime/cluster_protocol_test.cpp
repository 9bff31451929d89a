// The edge's typed interface (runtime/cluster/edge_protocol.hpp): each node publishes
// its edge with it, every type it names is registered for the wire, and a node
// whose edge speaks another interface (another skein version, or anything else
// listening on a member's port) gets no link: calls for its threads answer
// unavailable saying why, and nothing is sent to it.
#include <catch2/catch.hpp>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/io/middleman.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <atomic>

#include "actors/error.hpp"
#include "runtime/cluster/cluster_link.hpp"
#include "tests/runtime/cluster_fixture.hpp"

using namespace skein;
using namespace skein::test;
using namespace std::chrono_literals;

namespace {

// An edge of an older protocol: the same counts call and one more that
// takes other arguments.
using older_edge = caf::typed_actor<caf::replies_to<count_atom>::with<uint64_t, uint64_t>,
                                    caf::replies_to<caf::get_atom, std::string, uint64_t>::with<manifest>>;

struct not_registered {
  int x = 0;
};

// A thread id that member `index` of `f` owns.
std::string id_owned_by(cluster_fixture& f, size_t index) {
  for (int i = 0;; ++i) {
    std::string id = "th_20261125_" + std::to_string(200000 + i);
    if (f.owner(id) == index) return id;
  }
}

}  // namespace

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(not_registered)

TEST_CASE("cluster: every type the edge interface names is registered for the wire") {
  caf::actor_system_config cfg;
  prepare_cluster_config(cfg);
  caf::actor_system sys{cfg};
  auto sigs = sys.message_types<edge_actor>();
  // One signature per call, none lost to a duplicate.
  CHECK(sigs.size() == 54);
  // A type nobody registered shows in a signature as "<invalid-type[typeid
  // …]>"; every skein value crosses under its registered "skein." name.
  auto unregistered = [](const std::string& sig) { return sig.find("invalid-type") != std::string::npos; };
  auto probe = sys.message_types<caf::typed_actor<caf::replies_to<count_atom, not_registered>::with<bool>>>();
  REQUIRE(probe.size() == 1);
  INFO("an unregistered type shows as: " << *probe.begin());
  REQUIRE(unregistered(*probe.begin()));
  for (const auto& sig : sigs) {
    INFO(sig);
    CHECK_FALSE(unregistered(sig));
  }
  // And the interface a node publishes is the one a node expects.
  cluster_fixture f{1};
  auto edge = sys.middleman().remote_actor<edge_actor>("127.0.0.1", f.members[0].port);
  INFO((edge ? std::string{} : sys.render(edge.error())));
  REQUIRE(edge);
  caf::scoped_actor self{sys};
  uint64_t threads = 99;
  self->request(*edge, 5s, count_atom::value)
      .receive([&](uint64_t t, uint64_t) { threads = t; }, [&](caf::error& e) { FAIL(sys.render(e)); });
  CHECK(threads == 0);
  // CAF refuses a handle of another interface for it.
  CHECK_FALSE(sys.middleman().remote_actor<older_edge>("127.0.0.1", f.members[0].port));
}

TEST_CASE("cluster: a member whose edge speaks another interface gets no link") {
  // n3's port is held by an actor system that is no skein node of this
  // version: an edge of an older interface, or an untyped actor.
  cluster_fixture f{0};
  for (int i = 0; i < 3; ++i) f.add_member();
  f.n = 2;
  caf::actor_system_config cfg;
  prepare_cluster_config(cfg);
  caf::actor_system sys{cfg};
  auto asked = std::make_shared<std::atomic<int>>(0);
  caf::actor fake;
  const char* what = "";
  SECTION("an edge of an older interface") {
    what = "an older edge";
    auto older = sys.spawn([asked](older_edge::pointer) -> older_edge::behavior_type {
      return {[asked](count_atom) -> caf::result<uint64_t, uint64_t> {
                ++*asked;
                return {uint64_t{0}, uint64_t{0}};
              },
              [asked](caf::get_atom, std::string&, uint64_t) -> caf::result<manifest> {
                ++*asked;
                return manifest{};
              }};
    });
    REQUIRE(sys.middleman().publish(older, f.members[2].port, "127.0.0.1", true));
    fake = caf::actor_cast<caf::actor>(older);
  }
  SECTION("an untyped actor (no interface)") {
    what = "an untyped actor";
    fake = sys.spawn([asked](caf::event_based_actor* self) -> caf::behavior {
      self->set_default_handler([asked](caf::scheduled_actor*, caf::message_view&) -> caf::result<caf::message> {
        ++*asked;
        return caf::message{};
      });
      return {[asked](count_atom) {
        ++*asked;
        return std::make_tuple(uint64_t{0}, uint64_t{0});
      }};
    });
    REQUIRE(sys.middleman().publish(fake, f.members[2].port, "127.0.0.1", true));
  }
  f.open(0);
  f.open(1);
  f.agent(0);
  const std::string foreign = id_owned_by(f, 2);
  for (size_t via : {0, 1}) {
    manifest m;
    status s = f.nodes[via]->get_thread(foreign, &m);
    INFO(what << " via n" << via + 1 << ": " << s.to_string());
    CHECK(s.code() == errc::unavailable);
    CHECK(s.message().find("n3") != std::string::npos);
    CHECK(s.message().find("another interface") != std::string::npos);
    std::vector<cluster_member_state> members;
    REQUIRE(f.nodes[via]->cluster_members(&members).is_ok());
    REQUIRE(members.size() == 3);
    CHECK(members[2].state == "down");
    CHECK(members[2].last_error.find("another interface") != std::string::npos);
  }
  // Nothing was sent to it, not even a call for the counts.
  CHECK(*asked == 0);
  // The two real nodes serve each other all the while.
  for (size_t k = 0; k < 4; ++k) {
    manifest t = f.thread(k % 2);
    CHECK(f.run((k + 1) % 2, t.id, "still here").text == "done");
  }
  caf::anon_send_exit(fake, caf::exit_reason::user_shutdown);
}


TEST_CASE("cluster: a forwarded send whose request is lost is asked again and runs once") {
  // The owner's edge takes the first forwarded send and never answers it, as
  // when CAF closes the link it came on (two nodes dialing each other at once).
  auto lost = std::make_shared<std::atomic<int>>(0);
  cluster_fixture f(3, [lost](runtime_options& o) {
    o.cluster.request_timeout_ms = 300;  // the forwarder asks again after this
    o.cluster.lose_send = [lost](const std::string&) { return lost->fetch_add(1) == 0; };
  });
  f.agent(0);
  manifest t = f.thread(0);
  const size_t via = (f.owner(t.id) + 1) % f.n;
  run_input in;
  in.text = "hello once";
  run_result r;
  status s = f.nodes[via]->send(t.id, in).wait(&r, 30s);
  INFO(s.to_string());
  REQUIRE(s.is_ok());
  CHECK(r.text == "done");
  CHECK(lost->load() >= 2);  // the first was lost, a repeat went through
  // One run in the log: one input, one result.
  std::vector<event> events;
  REQUIRE(f.nodes[via]->read(t.id, history_view::complete, 0, 1000, &events).is_ok());
  size_t inputs = 0, results = 0;
  for (const auto& e : events) {
    if (e.type == event_type::message && e.role == message_role::user) ++inputs;
    if (e.type == event_type::result) ++results;
  }
  CHECK(inputs == 1);
  CHECK(results == 1);
  // Later sends through the same node go through at once.
  CHECK(f.run(via, t.id, "again").text == "done");
}
