// Encryption at rest (persistence/encryption.hpp, rekey.hpp) through a real
// runtime and RocksDB: no planted secret in any byte on disk, WAL included; the
// key checks refuse before touching a file; rekey in every direction, and a
// SIGKILL at every step of its swap.
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sys/stat.h>
#include <sys/wait.h>

#include "persistence/encryption.hpp"
#include "persistence/event_log.hpp"
#include "persistence/rekey.hpp"
#include "runtime/runtime.hpp"
#include "tests/support/child_process.hpp"
#include "tests/support/log_fixtures.hpp"
#include "tests/support/runtime_fixture.hpp"
#include "tests/support/temp_dir.hpp"

namespace skein {
namespace {

namespace fs = std::filesystem;
using test::temp_dir;

const char* key_a_hex = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";
const char* key_b_hex = "f0e0d0c0b0a090807060504030201000ffeeddccbbaa99887766554433221100";

std::shared_ptr<const master_key> key_of(const std::string& dir, const char* hex, const std::string& name) {
  std::string path = dir + "/" + name;
  std::ofstream{path} << hex << "\n";
  auto k = std::make_shared<master_key>();
  status s = load_master_key(key_source::file(path), k.get());
  INFO(s.to_string());
  REQUIRE(s.is_ok());
  return k;
}

// The distinctive strings a scenario plants, random per run (printed: the seed).
struct planted {
  std::string user, tool, title, reply;
  explicit planted(uint64_t seed) {
    std::string tag = std::to_string(seed);
    user = "PLANTED-SECRET-user-" + tag;
    tool = "PLANTED-SECRET-tool-" + tag;
    title = "PLANTED-SECRET-title-" + tag;
    reply = "PLANTED-SECRET-reply-" + tag;
  }
  std::vector<std::string> all() const { return {user, tool, title, reply}; }
};

uint64_t fresh_seed() {
  uint64_t seed = std::random_device{}();
  std::printf("encryption_test: planted strings use seed %llu\n", static_cast<unsigned long long>(seed));
  return seed;
}

runtime_options options_for(const std::string& data, std::shared_ptr<const master_key> key, const planted& p) {
  runtime_options o = test::without_effects();
  o.data_dir = data;
  o.encryption = std::move(key);
  std::string tool_text = p.tool;
  o.tools.push_back(make_function_tool({"lookup", "looks it up", "{}"}, [tool_text](const tool_invocation&) {
    return tool_output{tool_text, false};
  }));
  return o;
}

// One agent, one thread titled with the planted title, a run whose user message,
// tool result and reply carry the planted strings. Returns the thread id.
std::string plant(runtime& rt, const planted& p) {
  agent_config a;
  a.id = "a";
  a.system_prompt = "test";
  a.tools = {"lookup"};
  a.engine_config = R"({"rules": [{"turn": 1, "tool_calls": [{"name": "lookup", "id": "l1"}]}],
                        "default": {"reply": ")" + p.reply + R"( {tool_result}"}})";
  REQUIRE(rt.create_agent(a).is_ok());
  thread_options t;
  t.agent_id = "a";
  t.title = p.title;
  manifest m;
  REQUIRE(rt.create_thread(t, &m).is_ok());
  run_input in;
  in.text = p.user;
  run_result r;
  auto s = rt.send(m.id, in).wait(&r, std::chrono::seconds(60));
  INFO(s.to_string());
  REQUIRE(s.is_ok());
  return m.id;
}

std::vector<std::string> encoded_events(runtime& rt, const std::string& thread) {
  std::vector<event> events;
  REQUIRE(rt.read(thread, history_view::complete, 1, 0, &events).is_ok());
  std::vector<std::string> out;
  for (const auto& e : events) {
    std::string json;
    REQUIRE(encode_event(e, &json).is_ok());
    out.push_back(json);
  }
  return out;
}

std::string read_all(const fs::path& p) {
  std::ifstream in{p, std::ios::binary};
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// The planted strings found in any byte of any file under `root`.
std::set<std::string> found_in_files(const fs::path& root, const std::vector<std::string>& needles) {
  std::set<std::string> found;
  size_t files = 0;
  for (const auto& entry : fs::recursive_directory_iterator(root)) {
    if (!entry.is_regular_file()) continue;
    ++files;
    std::string bytes = read_all(entry.path());
    for (const auto& n : needles)
      if (bytes.find(n) != std::string::npos) found.insert(n + " in " + entry.path().filename().string());
  }
  REQUIRE(files > 0);
  return found;
}

// Copies the WAL files (*.log) of `data` into `to` while the database is open,
// before any flush: the records that later compaction drops.
size_t copy_wal(const std::string& data, const fs::path& to) {
  fs::create_directories(to);
  size_t copied = 0;
  for (const auto& entry : fs::directory_iterator(data)) {
    if (entry.path().extension() != ".log") continue;
    fs::copy_file(entry.path(), to / entry.path().filename());
    copied += fs::file_size(entry.path());
  }
  return copied;
}

// Runs the scenario and returns what a scan of the data dir and the WAL copies finds.
std::set<std::string> scenario(const temp_dir& dir, std::shared_ptr<const master_key> key, const planted& p) {
  std::string data = dir.str("data");
  std::string thread;
  std::vector<std::string> before;
  {
    std::unique_ptr<runtime> rt;
    REQUIRE(runtime::open(options_for(data, key, p), &rt).is_ok());
    thread = plant(*rt, p);
    before = encoded_events(*rt, thread);
    REQUIRE(copy_wal(data, dir.path() / "wal-copy") > 0);
    REQUIRE(rt->close().is_ok());
  }
  {
    log_options lo;
    lo.path = data;
    lo.encryption = key;
    REQUIRE(test::open_log(lo)->compact_all().is_ok());
  }
  auto found = found_in_files(dir.path(), p.all());
  // Every event reads back, with the same key.
  std::unique_ptr<runtime> rt;
  REQUIRE(runtime::open(options_for(data, key, p), &rt).is_ok());
  CHECK(encoded_events(*rt, thread) == before);
  manifest m;
  REQUIRE(rt->get_thread(thread, &m).is_ok());
  CHECK(m.title == p.title);
  REQUIRE(rt->close().is_ok());
  return found;
}

// Every entry under `root`: its kind, bytes and modification time.
std::map<std::string, std::string> snapshot(const fs::path& root) {
  std::map<std::string, std::string> out;
  for (const auto& entry : fs::recursive_directory_iterator(root)) {
    struct stat st{};
    REQUIRE(::stat(entry.path().c_str(), &st) == 0);
    std::string v = std::to_string(st.st_mtim.tv_sec) + "." + std::to_string(st.st_mtim.tv_nsec) + ":";
    v += entry.is_regular_file() ? read_all(entry.path()) : std::string("<dir>");
    out[entry.path().string()] = std::move(v);
  }
  return out;
}

status open_with(const std::string& data, std::shared_ptr<const master_key> key) {
  runtime_options o = test::without_effects();
  o.data_dir = data;
  o.encryption = std::move(key);
  std::unique_ptr<runtime> rt;
  status s = runtime::open(o, &rt);
  if (s) s = rt->close();
  return s;
}

// Opening `data` with `key` is refused as invalid input, with each of `phrases`
// in its message, and changes no file under `root`.
void check_refused(const fs::path& root, const std::string& data, std::shared_ptr<const master_key> key,
                   std::initializer_list<const char*> phrases) {
  auto before = snapshot(root);
  status s = open_with(data, std::move(key));
  CHECK(s.code() == errc::invalid_input);
  for (const char* phrase : phrases) CHECK(s.message().find(phrase) != std::string::npos);
  CHECK(snapshot(root) == before);
}

// The database at `data`, opened with `key`; it must open.
std::unique_ptr<runtime> open_ok(const std::string& data, std::shared_ptr<const master_key> key, const planted& p) {
  std::unique_ptr<runtime> rt;
  auto s = runtime::open(options_for(data, std::move(key), p), &rt);
  INFO(s.to_string());
  REQUIRE(s.is_ok());
  return rt;
}

// An encrypted (or plain) database with one planted thread; its events.
std::vector<std::string> make_db(const std::string& data, std::shared_ptr<const master_key> key, const planted& p,
                                 std::string* thread) {
  auto rt = open_ok(data, std::move(key), p);
  *thread = plant(*rt, p);
  auto events = encoded_events(*rt, *thread);
  REQUIRE(rt->close().is_ok());
  return events;
}

std::vector<std::string> read_back(const std::string& data, std::shared_ptr<const master_key> key, const planted& p,
                                   const std::string& thread) {
  auto rt = open_ok(data, std::move(key), p);
  auto events = encoded_events(*rt, thread);
  REQUIRE(rt->close().is_ok());
  return events;
}

// A temp dir with planted strings and two keys in it (a.key, b.key); the
// fixture of the tests that open one database with either key.
struct two_keys {
  temp_dir dir;
  planted p{fresh_seed()};
  std::shared_ptr<const master_key> key_a = key_of(dir.path().string(), key_a_hex, "a.key");
  std::shared_ptr<const master_key> key_b = key_of(dir.path().string(), key_b_hex, "b.key");
};

}  // namespace

TEST_CASE("encryption: no planted string in any byte of an encrypted data dir, WAL copies included") {
  temp_dir dir;
  planted p{fresh_seed()};
  auto found = scenario(dir, key_of(dir.path().string(), key_a_hex, "key"), p);
  INFO("found: " << Catch::Detail::stringify(found));
  CHECK(found.empty());
  CHECK(fs::exists(dir.path() / "data" / key_file_name));
}

TEST_CASE("encryption: the same scenario without a key leaves every planted string on disk (the scan works)") {
  temp_dir dir;
  planted p{fresh_seed()};
  auto found = scenario(dir, nullptr, p);
  for (const auto& needle : p.all()) {
    bool seen = false;
    for (const auto& f : found) seen = seen || f.rfind(needle + " in ", 0) == 0;
    INFO(needle);
    CHECK(seen);
  }
}

TEST_CASE_METHOD(two_keys, "encryption: a wrong key, a missing key and a key for a plain database are refused, touching no file") {
  std::string thread;

  SECTION("an encrypted database") {
    std::string data = dir.str("enc");
    auto events = make_db(data, key_a, p, &thread);
    check_refused(dir.path(), data, key_b, {"wrong key"});
    check_refused(dir.path(), data, nullptr, {"encrypted: a key is needed", "--key-file"});
    CHECK(read_back(data, key_a, p, thread) == events);
  }
  SECTION("a plain database") {
    std::string data = dir.str("plain");
    auto events = make_db(data, nullptr, p, &thread);
    check_refused(dir.path(), data, key_a, {"not encrypted: use skein rekey"});
    CHECK(read_back(data, nullptr, p, thread) == events);
  }
  SECTION("memory mode") {
    runtime_options o = test::without_effects();
    o.data_dir = "mem";
    o.mode = durability::memory;
    o.encryption = key_a;
    std::unique_ptr<runtime> rt;
    status s = runtime::open(o, &rt);
    CHECK(s.code() == errc::invalid_input);
  }
}

TEST_CASE("encryption: a malformed or missing key names its source, never its bytes") {
  temp_dir dir;
  master_key k;
  const std::string secretish = "5ec2e75ec2e75ec2e75ec2e75ec2e75ec2e75ec2e75ec2e75ec2e75ec2e75eZZ";  // 64, not hex
  for (const std::string& body : {secretish, std::string(key_a_hex).substr(0, 63), std::string(key_a_hex) + "00",
                                  std::string(key_a_hex) + " x", std::string("")}) {
    std::string path = (dir.path() / "bad.key").string();
    std::ofstream{path, std::ios::trunc} << body;
    status s = load_master_key(key_source::file(path), &k);
    INFO(s.to_string());
    CHECK(s.code() == errc::invalid_input);
    CHECK(s.message().find(path) != std::string::npos);
    if (body.size() >= 8) CHECK(s.message().find(body.substr(0, 8)) == std::string::npos);

    ::setenv("SKEIN_TEST_BAD_KEY", body.c_str(), 1);
    s = load_master_key(key_source::env("SKEIN_TEST_BAD_KEY"), &k);
    CHECK(s.code() == errc::invalid_input);
    CHECK(s.message().find("SKEIN_TEST_BAD_KEY") != std::string::npos);
    if (body.size() >= 8) CHECK(s.message().find(body.substr(0, 8)) == std::string::npos);
  }
  ::unsetenv("SKEIN_TEST_BAD_KEY");
  status s = load_master_key(key_source::env("SKEIN_TEST_BAD_KEY"), &k);
  CHECK(s.code() == errc::not_found);
  CHECK(s.message().find("SKEIN_TEST_BAD_KEY") != std::string::npos);
  s = load_master_key(key_source::file((dir.path() / "absent.key").string()), &k);
  CHECK(s.code() == errc::not_found);
  CHECK(s.message().find("absent.key") != std::string::npos);

  // Surrounding whitespace and a newline are fine, in a file and in a variable.
  std::string path = (dir.path() / "good.key").string();
  std::ofstream{path, std::ios::trunc} << "\n  " << key_a_hex << "  \n";
  CHECK(load_master_key(key_source::file(path), &k).is_ok());
  ::setenv("SKEIN_TEST_GOOD_KEY", (std::string(" ") + key_b_hex + "\n").c_str(), 1);
  CHECK(load_master_key(key_source::env("SKEIN_TEST_GOOD_KEY"), &k).is_ok());
  ::unsetenv("SKEIN_TEST_GOOD_KEY");
}

TEST_CASE_METHOD(two_keys, "rekey: old key to new key reads everything back with the new key and refuses the old one") {
  std::string data = dir.str("data"), thread;
  auto events = make_db(data, key_a, p, &thread);
  std::string before_key = read_all(fs::path(data) / key_file_name);

  std::vector<std::string> phases;
  uint64_t keys = 0;
  status s = rekey_database(data, key_a.get(), key_b.get(), [&](const rekey_progress& r) {
    phases.emplace_back(to_string(r.at));
    if (r.at == rekey_progress::phase::family_done) keys += r.keys;
  });
  INFO(s.to_string());
  REQUIRE(s.is_ok());
  CHECK(keys > 0);
  CHECK(phases.back() == "done");
  CHECK(read_all(fs::path(data) / key_file_name) != before_key);  // a new data key, wrapped anew
  CHECK(!fs::exists(data + ".rekey"));
  CHECK(!fs::exists(data + ".rekey-old"));
  CHECK(read_back(data, key_b, p, thread) == events);
  CHECK(open_with(data, key_a).message().find("wrong key") != std::string::npos);
  CHECK(found_in_files(data, p.all()).empty());
}

TEST_CASE("rekey: a plain database encrypted, then decrypted") {
  temp_dir dir;
  planted p{fresh_seed()};
  auto key_b = key_of(dir.path().string(), key_b_hex, "b.key");
  std::string data = dir.str("data"), thread;
  auto events = make_db(data, nullptr, p, &thread);

  REQUIRE(rekey_database(data, nullptr, key_b.get(), {}).is_ok());
  CHECK(fs::exists(fs::path(data) / key_file_name));
  CHECK(open_with(data, nullptr).message().find("a key is needed") != std::string::npos);
  CHECK(read_back(data, key_b, p, thread) == events);
  CHECK(found_in_files(data, p.all()).empty());

  REQUIRE(rekey_database(data, key_b.get(), nullptr, {}).is_ok());
  CHECK(!fs::exists(fs::path(data) / key_file_name));
  CHECK(open_with(data, key_b).message().find("not encrypted") != std::string::npos);
  CHECK(read_back(data, nullptr, p, thread) == events);
}

TEST_CASE_METHOD(two_keys, "rekey: refused with a wrong old key or while the database is open, the old one intact") {
  std::string data = dir.str("data"), thread;
  auto events = make_db(data, key_a, p, &thread);

  status wrong = rekey_database(data, key_b.get(), key_a.get(), {});
  CHECK(wrong.message().find("wrong key") != std::string::npos);
  {
    std::unique_ptr<runtime> rt;
    REQUIRE(runtime::open(options_for(data, key_a, p), &rt).is_ok());
    status busy = rekey_database(data, key_a.get(), key_b.get(), {});
    INFO(busy.to_string());
    CHECK(busy.code() == errc::conflict);
    CHECK(busy.message().find("in use") != std::string::npos);
    REQUIRE(rt->close().is_ok());
  }
  CHECK(!fs::exists(data + ".rekey"));
  CHECK(read_back(data, key_a, p, thread) == events);
}

TEST_CASE_METHOD(two_keys, "rekey: a SIGKILL at every step leaves the old database with the old key or the new one with the new key") {
  std::string a_path = (dir.path() / "a.key").string(), b_path = (dir.path() / "b.key").string();
  // The steps before the commit point (the second rename) keep the old database.
  const std::vector<std::pair<std::string, bool>> phases = {
      {"opened", false}, {"key_written", false}, {"copied", false},  {"family_done", false},
      {"synced", false}, {"renamed_old", false}, {"swapped", true}, {"done", true}};
  for (const auto& [phase, is_new] : phases) {
    std::string data = dir.str("data-" + phase), thread;
    auto events = make_db(data, key_a, p, &thread);
    test::child_process writer({SKEIN_REKEY_WRITER, data, a_path, b_path, phase});
    writer.read_until(std::chrono::seconds(120));
    int st = writer.stop(0);
    INFO("phase " << phase << ", wait status " << st);
    CHECK(WIFSIGNALED(st));
    if (WIFSIGNALED(st)) CHECK(WTERMSIG(st) == SIGKILL);
    auto right = is_new ? key_b : key_a;
    auto other = is_new ? key_a : key_b;
    CHECK(read_back(data, right, p, thread) == events);  // the open finishes or rolls back first
    CHECK(!fs::exists(data + ".rekey"));
    CHECK(!fs::exists(data + ".rekey-old"));
    CHECK(open_with(data, other).message().find("wrong key") != std::string::npos);
  }
}

}  // namespace skein
