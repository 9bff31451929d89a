// args: the arguments of skein's subcommands as plain data (arg), what a
// command line gave for them (given), and the subcommands with flags of their
// own (serve, demo, mcp, rekey). app.cpp alone turns them into CLI11 parsers:
// no CLI11 in this header.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace skein::tools::cli {

// One argument of a command: a positional (`name` without dashes) or an option
// ("--title", "-k"). Built with pos(), opt() and flag(), then the modifiers.
struct arg {
 private:
  // A copy with one field set. Defined before the modifiers that call it:
  // clang 14 takes a member template used above its definition for undefined
  // in a constant expression.
  template <class T>
  constexpr arg with(T arg::*field, T value) const {
    arg a = *this;
    a.*field = value;
    return a;
  }

 public:
  enum class kind : uint8_t { positional, option, flag };
  kind type = kind::option;
  std::string_view name;     // "id", "--title", "-k"
  std::string_view metavar;  // an option's value in help: "T", "N"
  std::string_view help;
  bool required = false;
  bool repeated = false;     // an option: each use adds a value; a positional: takes every word left
  bool number = false;       // an unsigned decimal integer, checked before any request
  std::string_view one_of;   // a group of options of which exactly one is given
  std::string_view env;      // an option: the environment variable read when it is not given

  constexpr arg req() const { return with(&arg::required, true); }
  constexpr arg many() const { return with(&arg::repeated, true); }
  constexpr arg num() const { return with(&arg::number, true); }
  constexpr arg group(std::string_view g) const { return with(&arg::one_of, g); }
  constexpr arg from_env(std::string_view e) const { return with(&arg::env, e); }
  // The key of its value in `given`: the name without leading dashes.
  constexpr std::string_view key() const { return name.substr(name.find_first_not_of('-')); }
};

// An argument of kind `type`: what pos(), opt() and flag() start from.
constexpr arg named(arg::kind type, std::string_view name, std::string_view help) {
  arg a;
  a.type = type;
  a.name = name;
  a.help = help;
  return a;
}
constexpr arg pos(std::string_view name, std::string_view help) {
  return named(arg::kind::positional, name, help).req();
}
constexpr arg opt(std::string_view name, std::string_view metavar, std::string_view help) {
  arg a = named(arg::kind::option, name, help);
  a.metavar = metavar;
  return a;
}
constexpr arg flag(std::string_view name, std::string_view help) { return named(arg::kind::flag, name, help); }

// An HTTP route: "METHOD /path", a {name} in the path standing for one segment.
struct route {
  std::string_view method;
  std::string_view path;
  static route parse(std::string_view text);  // "POST /v1/threads" -> {"POST", "/v1/threads"}
};

// What the command line gave, by argument key (arg::key()).
struct given {
  std::map<std::string, std::vector<std::string>, std::less<>> values;  // a flag: present, no values

  bool has(std::string_view key) const { return values.find(key) != values.end(); }
  // The last value given (an option given twice: the later wins), else `fallback`.
  std::string get(std::string_view key, std::string_view fallback = {}) const;
  const std::vector<std::string>& all(std::string_view key) const;
  // A number() argument's value (the parser checked it), else `fallback`.
  uint64_t number(std::string_view key, uint64_t fallback = 0) const;
};

// A subcommand that is no HTTP route (serve, demo, mcp, rekey): its flags and
// what runs it; its parser, --help and usage errors are built like a command
// row's. Its own checks of values it read exit 64 too (usage).
struct subcommand {
  std::string_view name;
  std::string_view summary;  // one line, in skein --help
  std::string description;   // more, in its --help
  std::vector<arg> args;
  int (*run)(const given&);
  std::string footer = {};   // last in its --help
};

const subcommand& serve_subcommand();  // tools/serve.cpp
const subcommand& demo_subcommand();   // tools/demo.cpp
const subcommand& mcp_subcommand();    // tools/mcp/mcp_main.cpp
const subcommand& rekey_subcommand();  // tools/rekey.cpp

}  // namespace skein::tools::cli
