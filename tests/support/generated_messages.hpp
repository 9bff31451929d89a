// Everyday messages for memory-search tests: words of a small vocabulary, so
// that a planted message whose key words are not among them stands out.
#pragma once

#include <iterator>
#include <random>
#include <string>

namespace skein::test {

inline const char* const message_vocabulary[] = {
    "the", "a", "we", "you", "meeting", "deploy", "service", "billing", "report", "weekly", "team",
    "review", "budget", "customer", "ticket", "server", "error", "fixed", "update", "schedule",
    "monday", "friday", "lunch", "project", "deadline", "draft", "email", "call", "notes", "plan",
    "database", "backup", "release", "branch", "merge", "test", "failed", "passed", "invoice",
    "contract", "design", "mockup", "feedback", "sprint", "goal", "metric", "dashboard", "alert",
    "on", "at", "for", "with", "about", "please", "can", "send", "check", "move", "cancel", "book"};

inline std::string generated_message(std::mt19937_64& rng) {
  std::uniform_int_distribution<size_t> word(0, std::size(message_vocabulary) - 1), len(6, 18);
  std::string s;
  for (size_t i = 0, n = len(rng); i < n; ++i) s += std::string(i ? " " : "") + message_vocabulary[word(rng)];
  return s;
}

}  // namespace skein::test
