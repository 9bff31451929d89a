// Replicated messages sealed with the namespace's key
// (persistence/sealed_message.hpp): what NATS stores holds no plaintext (a
// grep of a real server's files, with an unsealed control that it does find),
// and a message changed, moved to another subject or sealed with another key
// does not open.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "persistence/sealed_message.hpp"
#include "tests/support/eventually.hpp"
#include "tests/support/nats_cluster.hpp"
#include "tests/support/sealers.hpp"

using namespace skein;
using namespace skein::replication;
using namespace std::chrono_literals;
using skein::test::nats_cluster;
using skein::test::sealer_for;

namespace {

// Whether any file under `dir` holds `needle`.
bool store_holds(const std::filesystem::path& dir, const std::string& needle) {
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir)) {
    if (!entry.is_regular_file()) continue;
    std::ifstream in{entry.path(), std::ios::binary};
    std::stringstream ss;
    ss << in.rdbuf();
    if (ss.str().find(needle) != std::string::npos) return true;
  }
  return false;
}

}  // namespace

TEST_CASE("sealed messages: open only whole, on their subject, with their key") {
  auto sealer = sealer_for(7), other = sealer_for(8);
  const std::string plain = "the rows of a journal group \x01\x02 with any bytes";
  std::string sealed, again, out;
  REQUIRE(sealer.seal("log.p3", plain, &sealed).is_ok());
  REQUIRE(sealer.seal("log.p3", plain, &again).is_ok());
  CHECK(sealed != again);  // a fresh nonce each time
  CHECK(sealed.find("journal") == std::string::npos);
  REQUIRE(sealer.open("log.p3", sealed, &out).is_ok());
  CHECK(out == plain);
  CHECK(sealer.open("log.p4", sealed, &out).code() == errc::corruption);  // moved to another partition
  CHECK(out.empty());
  CHECK(other.open("log.p3", sealed, &out).code() == errc::corruption);  // another namespace's key
  for (size_t i = 0; i < sealed.size(); ++i) {
    INFO("byte " << i << " changed");
    std::string changed = sealed;
    changed[i] = static_cast<char>(changed[i] ^ 0x20);
    CHECK(sealer.open("log.p3", changed, &out).code() == errc::corruption);
  }
  for (size_t n : {size_t{0}, size_t{1}, size_t{2}, size_t{29}, sealed.size() - 1}) {
    INFO("first " << n << " bytes");
    CHECK(sealer.open("log.p3", sealed.substr(0, n), &out).code() == errc::corruption);
  }
  std::string empty_sealed;
  REQUIRE(sealer.seal("log.p3", "", &empty_sealed).is_ok());
  REQUIRE(sealer.open("log.p3", empty_sealed, &out).is_ok());
  CHECK(out.empty());
}

TEST_CASE("sealed messages: a grep of the NATS server's files finds no planted plaintext") {
  if (nats_cluster::binary().empty()) {
    WARN("nats-server is not installed (packages.txt lists it): the sealed log test did not run");
    return;
  }
  nats_cluster nats{1};
  auto js = nats.connect();
  REQUIRE(js->ensure_stream({"log", {"log.>"}, 1}).is_ok());
  auto sealer = sealer_for(42);
  const std::string planted = "PLANTED-PLAINTEXT-7f3a91c2", control = "UNSEALED-CONTROL-55d0e8b1";
  uint64_t last = 0;
  for (int i = 0; i < 20; ++i) {
    std::string sealed;
    REQUIRE(sealer.seal("log.p1", "batch " + std::to_string(i) + " " + planted, &sealed).is_ok());
    REQUIRE(js->publish("log.p1", sealed, last, &last).is_ok());
  }
  uint64_t unsealed = 0;
  REQUIRE(js->publish("log.control", "a message not sealed: " + control, 0, &unsealed).is_ok());
  // The grep sees what is stored in the clear, once the server wrote its
  // block file (it writes lazily: a bounded wait). The sealed ones came
  // before it into the same file.
  REQUIRE(skein::test::eventually([&] { return store_holds(nats.store_dir(0), control); }, 10s));
  CHECK_FALSE(store_holds(nats.store_dir(0), planted));
  CHECK_FALSE(store_holds(nats.store_dir(0), "batch 3"));
  // A follower opens what it reads back.
  stream_message m;
  REQUIRE(js->last_on_subject("log", "log.p1", &m).is_ok());
  std::string out;
  REQUIRE(sealer.open(m.subject, m.data, &out).is_ok());
  CHECK(out == "batch 19 " + planted);
}
