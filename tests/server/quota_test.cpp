// Quotas over HTTP: a refused creation or input is 429 quota_exceeded naming
// the limit, with nothing written; /metrics shows the figures and limits.
#include <atomic>
#include <catch2/catch.hpp>

#include "tests/support/server_fixture.hpp"

using namespace skein;
using namespace skein::test;

namespace {

constexpr int64_t day0_ms = 1795392000000;  // 2026-11-23T00:00:00Z
const char* ok_rules = R"({"default": {"reply": "ok"}})";

}  // namespace

TEST_CASE("HTTP: past a quota, a create and a send are 429 quota_exceeded naming the limit, nothing written",
          "[quota]") {
  std::atomic<int64_t> now{day0_ms + 1000};
  runtime_options ro;
  ro.clock = [&] { return now.load(); };
  ro.effects.titles = ro.effects.embeddings = ro.effects.compaction = false;  // no events of their own
  ro.quota.threads_max = 1;
  ro.quota.events_per_day_max = 2;
  server_fixture f{ro};
  f.agent("a", ok_rules);
  std::string t = f.thread("a");

  auto created = f.call("POST", "/v1/threads", R"({"agent_id":"a"})");
  INFO(created.body);
  CHECK(created.status == 429);
  CHECK(error_code(created.body) == "quota_exceeded");
  CHECK(error_limit(created.body) == "threads_max");

  auto first = f.call("POST", "/v1/threads/" + t + "/entries", R"({"text":"hi","wait":true})");
  INFO(first.body);
  REQUIRE(first.status == 200);  // admitted at 0 events: it completes past the quota
  manifest before = check_entries_refused(f, t, 429, "quota_exceeded", "events_per_day_max");

  auto metrics = f.call("GET", "/metrics");
  INFO(metrics.body);
  CHECK(metrics.body.find("skein_quota_threads 1\n") != std::string::npos);
  CHECK(metrics.body.find("skein_quota_threads_max 1\n") != std::string::npos);
  CHECK(metrics.body.find("skein_quota_events_per_day_max 2\n") != std::string::npos);
  CHECK(metrics.body.find("skein_quota_events_today " + std::to_string(before.last_seq) + "\n") != std::string::npos);
  CHECK(metrics.body.find("skein_quota_storage_bytes ") != std::string::npos);
}
