// event_list: copies share storage and never see each other's later changes.
#include <catch2/catch.hpp>

#include <algorithm>
#include <thread>

#include "runtime/model/conversation.hpp"
#include "runtime/model/event_list.hpp"

using namespace skein;

namespace {

event numbered(size_t i) {
  event e = make_message(message_role::user, "message " + std::to_string(i));
  e.seq = i + 1;
  return e;
}

std::vector<event> numbered_events(size_t n) {
  std::vector<event> out;
  for (size_t i = 0; i < n; ++i) out.push_back(numbered(i));
  return out;
}

std::vector<uint64_t> seqs(const event_list& list) {
  std::vector<uint64_t> out;
  for (const auto& e : list) out.push_back(e.seq);
  return out;
}

}  // namespace

TEST_CASE("an event list holds its events in order across chunks, forwards and backwards") {
  constexpr size_t n = 1000;  // several chunks of doubling size
  event_list list;
  for (size_t i = 0; i < n; ++i) list.push_back(numbered(i));
  REQUIRE(list.size() == n);
  for (size_t i = 0; i < n; ++i) CHECK(list[i].seq == i + 1);
  CHECK(list.front().seq == 1);
  CHECK(list.back().seq == n);
  CHECK(list.to_vector() == numbered_events(n));
  CHECK(list == numbered_events(n));
  std::vector<uint64_t> backwards;
  for (auto it = list.rbegin(); it != list.rend(); ++it) backwards.push_back(it->seq);
  REQUIRE(backwards.size() == n);
  CHECK(backwards.front() == n);
  CHECK(backwards.back() == 1);
  CHECK(std::is_sorted(backwards.rbegin(), backwards.rend()));
  CHECK(static_cast<size_t>(list.end() - list.begin()) == n);
}

TEST_CASE("a copy of an event list does not see what the original appends, nor the other way round") {
  event_list a{numbered(0), numbered(1), numbered(2)};
  event_list b = a;  // shares a's store
  a.push_back(numbered(3));
  CHECK(seqs(a) == std::vector<uint64_t>{1, 2, 3, 4});
  CHECK(seqs(b) == std::vector<uint64_t>{1, 2, 3});
  // b's next slot is taken by a: b goes on in a store of its own.
  event other = make_message(message_role::assistant, "b's own");
  b.push_back(other);
  CHECK(seqs(a) == std::vector<uint64_t>{1, 2, 3, 4});
  REQUIRE(b.size() == 4);
  CHECK(b[3] == other);
  CHECK(a[3] == numbered(3));
  // And both go on independently.
  a.push_back(numbered(4));
  b.push_back(numbered(9));
  CHECK(seqs(a) == std::vector<uint64_t>{1, 2, 3, 4, 5});
  CHECK(seqs(b) == std::vector<uint64_t>{1, 2, 3, 0, 10});
}

TEST_CASE("an event list's pinned first element is replaced and removed without touching the rest") {
  event_list list{numbered(0), numbered(1)};
  CHECK(list.pinned_front() == nullptr);
  list.pin_front(make_system_prompt("first"));
  REQUIRE(list.size() == 3);
  CHECK(list.front().text == "first");
  CHECK(list[1].seq == 1);
  event_list copy = list;
  copy.pin_front(make_system_prompt("second"));
  CHECK(list.front().text == "first");
  CHECK(copy.front().text == "second");
  copy.unpin_front();
  CHECK(seqs(copy) == std::vector<uint64_t>{1, 2});
  list.clear_unpinned();
  REQUIRE(list.size() == 1);
  CHECK(list.front().text == "first");
  CHECK(seqs(copy) == std::vector<uint64_t>{1, 2});
  list.clear();
  CHECK(list.empty());
}

TEST_CASE("an event list counts its payload bytes as the elements change") {
  event_list list;
  CHECK(list.payload_bytes() == 0);
  list.push_back(make_message(message_role::user, "abcd"));              // 4
  list.push_back(make_tool_call("c1", "echo", R"({"q":1})"));          // 7 of json
  list.pin_front(make_system_prompt("xy"));                              // 2
  CHECK(list.payload_bytes() == 13);
  event_list copy = list;
  copy.push_back(make_message(message_role::assistant, "12345"));
  CHECK(copy.payload_bytes() == 18);
  CHECK(list.payload_bytes() == 13);
  list.clear_unpinned();
  CHECK(list.payload_bytes() == 2);
}

TEST_CASE("the working view kept as an event list equals the one built from the log, event by event") {
  std::vector<event> log;
  auto add = [&](event e) {
    e.seq = log.size() + 1;
    log.push_back(std::move(e));
  };
  add(make_system_prompt("be brief"));
  add(make_message(message_role::user, "hi"));
  add(make_signal("thread.start"));
  add(make_tool_call("c1", "echo", "{}"));
  add(make_tool_result("c1", "echo", "echo {}", false));
  add(make_message(message_role::assistant, "done"));
  add(make_compaction("summarize", 1, 6, "[]"));
  add(make_message(message_role::user, "again"));
  add(make_system_prompt("be briefer"));
  add(make_thinking("hmm"));
  add(make_message(message_role::assistant, "ok"));

  event_list view;
  for (size_t i = 0; i < log.size(); ++i) {
    extend_working_conversation(&view, log[i]);
    if (log[i].type == event_type::tool_call) continue;  // built from the log, its result is synthesized
    std::vector<event> prefix(log.begin(), log.begin() + static_cast<std::ptrdiff_t>(i + 1));
    INFO("after event " << i + 1);
    CHECK(view == working_conversation(prefix));
    // Built at once from the same prefix, as a thread does at activation.
    CHECK(working_list(working_conversation(prefix)) == view);
  }
  REQUIRE(view.pinned_front() != nullptr);
  CHECK(view.pinned_front()->text == "be briefer");
}

TEST_CASE("a snapshot of an event list reads on another thread while the owner appends") {
  constexpr size_t before = 500, after = 5000;
  event_list owner;
  for (size_t i = 0; i < before; ++i) owner.push_back(numbered(i));
  event_list snapshot = owner;
  std::vector<uint64_t> read;
  std::thread reader([&] {
    for (int pass = 0; pass < 20; ++pass) {
      read.clear();
      for (const auto& e : snapshot) read.push_back(e.seq);
    }
  });
  for (size_t i = before; i < before + after; ++i) owner.push_back(numbered(i));
  reader.join();
  REQUIRE(read.size() == before);
  for (size_t i = 0; i < before; ++i) CHECK(read[i] == i + 1);
  CHECK(owner.size() == before + after);
  CHECK(owner.back().seq == before + after);
}
