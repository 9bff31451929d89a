// A follower's side of the replicated log (event_log::apply_replicated and
// persistence/replicated_batch.hpp) on real RocksDB: a leader's thread rows,
// carried as one message, applied exactly once with the partition's sequence,
// across a reopen; malformed messages and foreign families refused whole.
#include <catch2/catch.hpp>

#include "persistence/replicated_batch.hpp"
#include "tests/support/log_fixtures.hpp"
#include "tests/support/temp_dir.hpp"

using namespace skein;
using namespace skein::test;

namespace {

std::vector<replicated_row> as_puts(const std::vector<log_row>& rows) {
  std::vector<replicated_row> out;
  for (const auto& r : rows) out.push_back({r.family, replicated_row::op::put, r.key, r.value});
  return out;
}

}  // namespace

TEST_CASE("replicated apply: a leader's rows land on a follower once, with the partition's sequence") {
  temp_dir leader_dir, follower_dir;
  auto leader = open_log(leader_dir.str());
  tick first = make_tick("t1", 1, 3);
  REQUIRE(leader->commit(first).is_ok());
  std::vector<log_row> rows;
  REQUIRE(leader->thread_rows("t1", &rows).is_ok());

  std::string bytes;
  encode_replicated(as_puts(rows), &bytes);
  std::vector<replicated_row> decoded;
  REQUIRE(decode_replicated(bytes, &decoded).is_ok());
  REQUIRE(decoded.size() == rows.size());

  {
    auto follower = open_log(follower_dir.str());
    uint64_t seq = 99;
    REQUIRE(follower->replicated_seq(4, &seq).is_ok());
    CHECK(seq == 0);
    bool applied = false;
    REQUIRE(follower->apply_replicated(4, 17, decoded, &applied).is_ok());
    CHECK(applied);
    std::vector<log_row> copy;
    REQUIRE(follower->thread_rows("t1", &copy).is_ok());
    REQUIRE(copy.size() == rows.size());
    for (size_t i = 0; i < rows.size(); ++i) {
      CHECK(copy[i].family == rows[i].family);
      CHECK(copy[i].key == rows[i].key);
      CHECK(copy[i].value == rows[i].value);
    }
    // The same message again, or an older one, changes nothing.
    std::vector<replicated_row> erase_all;
    for (const auto& r : rows) erase_all.push_back({r.family, replicated_row::op::erase, r.key, ""});
    REQUIRE(follower->apply_replicated(4, 17, erase_all, &applied).is_ok());
    CHECK_FALSE(applied);
    REQUIRE(follower->apply_replicated(4, 3, erase_all, &applied).is_ok());
    CHECK_FALSE(applied);
    CHECK(thread_keys(*follower, "t1") > 0);
    // Another partition has its own sequence.
    REQUIRE(follower->replicated_seq(5, &seq).is_ok());
    CHECK(seq == 0);
  }
  // Reopened (the rows and the sequence were one batch): both are there.
  auto follower = open_log(follower_dir.str());
  uint64_t seq = 0;
  REQUIRE(follower->replicated_seq(4, &seq).is_ok());
  CHECK(seq == 17);
  manifest m;
  REQUIRE(follower->read_manifest("t1", &m).is_ok());
  CHECK(m.last_seq == 3);
  // The next message erases the thread's rows.
  std::vector<replicated_row> erase_all;
  for (const auto& r : rows) erase_all.push_back({r.family, replicated_row::op::erase, r.key, ""});
  bool applied = false;
  REQUIRE(follower->apply_replicated(4, 18, erase_all, &applied).is_ok());
  CHECK(applied);
  CHECK(thread_keys(*follower, "t1") == 0);
}

TEST_CASE("replicated apply: a row of a family outside the replicated ones is refused and nothing is written") {
  temp_dir dir;
  auto log = open_log(dir.str());
  for (uint8_t family : {uint8_t{0}, uint8_t{9}, uint8_t{200}}) {
    INFO("family " << int{family});
    std::vector<replicated_row> rows{{1, replicated_row::op::put, "t9", "{}"}, {family, replicated_row::op::put, "k", "v"}};
    bool applied = true;
    status s = log->apply_replicated(1, 5, rows, &applied);
    CHECK(s.code() == errc::invalid_input);
    CHECK(s.field() == "rows");
    CHECK_FALSE(applied);
    uint64_t seq = 0;
    REQUIRE(log->replicated_seq(1, &seq).is_ok());
    CHECK(seq == 0);
    CHECK(thread_keys(*log, "t9") == 0);
  }
}

TEST_CASE("replicated batch: every truncation and every bad byte of a message is corruption, never rows") {
  using op = replicated_row::op;
  std::vector<replicated_row> rows{{1, op::put, "t1", std::string(300, 'm')}, {2, op::erase, "t1/000001", ""},
                                   {6, op::put, "", ""}, {2, op::erase_range, "t1", "t2"}};
  std::string bytes;
  encode_replicated(rows, &bytes);
  std::vector<replicated_row> back;
  REQUIRE(decode_replicated(bytes, &back).is_ok());
  REQUIRE(back.size() == 4);
  CHECK(back[0].value == rows[0].value);
  CHECK(back[1].kind == replicated_row::op::erase);
  CHECK(back[2].key.empty());
  CHECK(back[3].kind == op::erase_range);
  CHECK(back[3].value == "t2");
  for (size_t n = 0; n < bytes.size(); ++n) {
    INFO("first " << n << " bytes");
    status s = decode_replicated(std::string_view(bytes).substr(0, n), &back);
    CHECK(s.code() == errc::corruption);
    CHECK(back.empty());
  }
  CHECK(decode_replicated(bytes + "x", &back).code() == errc::corruption);
  std::string v2 = bytes;
  v2[1] = 2;
  status s = decode_replicated(v2, &back);
  CHECK(s.message().find("version 2") != std::string::npos);
  // A count of a million rows in a few bytes is refused before any allocation.
  std::string liar = "R\x01\xc0\x84\x3d";  // count 1,000,000
  CHECK(decode_replicated(liar, &back).code() == errc::corruption);
  std::string bad_op = bytes;
  bad_op[3] = 7;
  CHECK(decode_replicated(bad_op, &back).code() == errc::corruption);
}
