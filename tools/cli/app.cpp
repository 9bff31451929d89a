// app: the `skein` command line on CLI11 — the one file that includes it. The
// parser, --help and usage errors are built from the command rows
// (command.hpp) and the other subcommands' definitions; parse errors exit 64.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <deque>
#include <iostream>
#include <memory>

#include "runtime/model/ids.hpp"
#include "skein/version.hpp"
#include "tools/cli/command.hpp"
#include "tools/tool_util.hpp"

namespace skein::tools::cli {
namespace {

constexpr const char* client_group = "client options";

const char* exit_codes_text =
    "exit codes: 0 success; 1 failure (server error, network); 2 a run failed, or diagnose:\n"
    "failed; 3 diagnose: stalled; 4 not found; 5 unauthorized or forbidden; 6 conflict;\n"
    "7 the server answered but the CLI cannot decode the response; 8 the agent's daily\n"
    "budget is spent (HTTP 402); 9 a quota of the database is reached (HTTP 429\n"
    "quota_exceeded); 64 usage error";

// The subcommands that are no HTTP route, in the order --help lists them.
std::vector<const subcommand*> own_subcommands() {
  return {&serve_subcommand(), &demo_subcommand(), &mcp_subcommand(), &rekey_subcommand()};
}

// A command row's parser: its CLI11 app and each argument's option.
struct row_app {
  const command* cmd = nullptr;  // else a subcommand's
  const subcommand* sub = nullptr;
  std::vector<std::pair<const arg*, CLI::Option*>> options;
};

// --help and usage lines from the parser's own definitions: the usage line is
// a synopsis of the app's positionals and options, a noun lists its verbs with
// the route each calls.
class formatter : public CLI::Formatter {
 public:
  static std::string metavar(const CLI::Option* o) {
    std::string t = o->get_type_name();
    return t.empty() ? t : " " + t;
  }

  std::map<const CLI::App*, const command*> rows;
  std::map<const CLI::App*, const subcommand*> subs;
  const CLI::App* root = nullptr;

  std::string make_usage(const CLI::App* app, std::string name) const override {
    std::vector<std::string> words;
    auto named = [](const CLI::Option* o) { return o->get_name(false, true) + metavar(o); };
    for (const CLI::Option* o : app->get_options([](const CLI::Option* o) { return o->get_positional(); }))
      words.push_back("<" + o->get_name(true, false) + ">" + (o->get_expected_max() > 1 ? "..." : ""));
    auto options = app->get_options([app](const CLI::Option* o) { return o->nonpositional() && o != app->get_help_ptr(); });
    for (const CLI::Option* o : options)
      if (o->get_required()) words.push_back(named(o));
    for (const CLI::App* g : app->get_subcommands([](const CLI::App* s) { return s->get_name().empty(); })) {
      std::string choice;
      for (const CLI::Option* o : g->get_options()) choice += (choice.empty() ? "(" : " | ") + named(o);
      if (!choice.empty()) words.push_back(choice + ")");
    }
    for (const CLI::Option* o : options)
      if (!o->get_required())
        words.push_back("[" + named(o) + "]" +
                        (o->get_multi_option_policy() == CLI::MultiOptionPolicy::TakeAll ? "..." : ""));
    if (app == root) words = {"<command> [options]"};
    else if (!app->get_subcommands([](const CLI::App* s) { return !s->get_name().empty(); }).empty())
      words.push_back("<command>");
    // One line while it fits, else continued under the command's name.
    std::string out = "usage: " + name;
    size_t line = out.size();
    for (const auto& w : words) {
      if (line + 1 + w.size() > 100) {
        out += "\n       ";
        line = 7;
      }
      out += " " + w;
      line += 1 + w.size();
    }
    return out + "\n";
  }

  std::string make_help(const CLI::App* app, std::string name, CLI::AppFormatMode mode) const override {
    std::string out = make_usage(app, name) + "\n";
    if (!app->get_description().empty()) out += app->get_description() + "\n";
    if (auto it = subs.find(app); it != subs.end() && !it->second->description.empty())
      out += "\n" + it->second->description + "\n";
    if (auto it = rows.find(app); it != rows.end()) {
      const command& cmd = *it->second;
      for (size_t i = 0; i < cmd.routes.size(); ++i)
        out += std::string(i == 0 ? "route: " : "       ") + std::string{cmd.routes[i]} + "\n";
      if (!cmd.notes.empty()) out += std::string{cmd.notes} + "\n";
    }
    out += section(get_label("Positionals"), app->get_options([](const CLI::Option* o) { return o->get_positional(); }));
    for (const std::string& group : app->get_groups())
      out += section(group, app->get_options([&](const CLI::Option* o) {
        return o->nonpositional() && o->get_group() == group;
      }));
    for (const CLI::App* g : app->get_subcommands([](const CLI::App* s) { return s->get_name().empty(); }))
      out += section(g->get_group() + " (" + g->get_description() + ")", g->get_options());
    out += make_subcommands(app, mode);
    out += "\n" + make_footer(app);
    return out;
  }

  // "\n<title>:\n" and a line for each option; "" for none.
  std::string section(const std::string& title, const std::vector<const CLI::Option*>& options) const {
    if (options.empty()) return {};
    std::string out = "\n" + title + ":\n";
    for (const CLI::Option* o : options) out += make_option(o, o->get_positional());
    return out;
  }

  // A noun's verbs with their routes; the root's commands (a noun with its verbs).
  std::string make_subcommands(const CLI::App* app, CLI::AppFormatMode) const override {
    auto subs = app->get_subcommands([](const CLI::App* s) { return !s->get_name().empty() && !s->get_group().empty(); });
    if (subs.empty()) return {};
    std::string out = "\ncommands:\n";
    for (const CLI::App* s : subs) {
      std::string line = "  " + s->get_name();
      line.resize(std::max<size_t>(line.size() + 1, 13), ' ');
      if (auto it = rows.find(s); it != rows.end()) {
        line += std::string{it->second->routes.front()};
        line.resize(std::max<size_t>(line.size() + 2, 54), ' ');
      }
      line += s->get_description();
      auto verbs = s->get_subcommands([](const CLI::App* v) { return !v->get_name().empty(); });
      if (!verbs.empty()) {
        line += "\n             ";
        for (const CLI::App* v : verbs) line += " " + v->get_name();
      }
      out += line + "\n";
    }
    return out;
  }

  // The root's footer: the exit codes; a command's: the client options (the
  // root's, as it defines them).
  std::string make_footer(const CLI::App* app) const override {
    if (app == root || root == nullptr) return CLI::Formatter::make_footer(app);
    if (auto it = subs.find(app); it != subs.end()) return it->second->footer.empty() ? "" : it->second->footer + "\n";
    std::string out = std::string{client_group} + ":";
    for (const CLI::Option* o : root->get_options([](const CLI::Option* o) { return o->get_group() == client_group; })) {
      out += " " + o->get_name(false, true) + metavar(o);
      if (!o->get_envname().empty()) out += " (" + o->get_envname() + ")";
      out += ",";
    }
    out.back() = '\n';
    return out + "exit codes: skein --help lists them\n";
  }
};

// A number() argument: an unsigned decimal integer.
CLI::Validator unsigned_number() {
  return CLI::Validator(
      [](std::string& v) {
        uint64_t n = 0;
        return parse_u64(v, &n) ? std::string{} : "expected an unsigned integer, got '" + v + "'";
      },
      "");
}

// Declares one command row's arguments on its app.
std::vector<std::pair<const arg*, CLI::Option*>> define(CLI::App* app, const std::vector<arg>& args) {
  std::vector<std::pair<const arg*, CLI::Option*>> out;
  std::map<std::string_view, CLI::App*> groups;
  for (const arg& a : args) {
    CLI::App* where = app;
    if (!a.one_of.empty()) {
      auto& g = groups[a.one_of];
      if (g == nullptr) {
        g = app->add_option_group(std::string{a.one_of}, "exactly one of");
        g->set_help_flag();
        g->require_option(1);
      }
      where = g;
    }
    CLI::Option* o = nullptr;
    if (a.type == arg::kind::flag) {
      o = where->add_flag(std::string{a.name})->description(std::string{a.help});
    } else {
      o = where->add_option(std::string{a.name})->description(std::string{a.help});
      if (a.type == arg::kind::option) o->type_name(std::string{a.metavar});
      else o->type_name("");
      if (a.repeated && a.type == arg::kind::positional) o->expected(1, CLI::detail::expected_max_vector_size)->allow_extra_args();
      o->multi_option_policy(a.repeated ? CLI::MultiOptionPolicy::TakeAll : CLI::MultiOptionPolicy::TakeLast);
      if (a.required) o->required();
      if (a.number) o->check(unsigned_number());
      if (!a.env.empty()) o->envname(std::string{a.env});
    }
    out.emplace_back(&a, o);
  }
  return out;
}

struct globals {
  std::string server = "http://127.0.0.1:7411";
  std::string token;
  std::string ns;
  bool json = false;
};

// The deepest subcommand the command line named ("skein thread fork": fork).
CLI::App* leaf_of(CLI::App* app) {
  for (;;) {
    auto subs = app->get_subcommands();
    if (subs.empty()) return app;
    app = subs.front();
  }
}

std::string path_of(const CLI::App* app) {
  std::string out;
  for (; app != nullptr; app = app->get_parent()) out = app->get_name() + (out.empty() ? "" : " " + out);
  return out;
}

// A word the parser could not place where a command was wanted (`skein
// thread bogus`): the unknown command, else "".
std::string unknown_command(CLI::App& root, const CLI::App* leaf) {
  bool wants_command = !leaf->get_subcommands([](const CLI::App* s) { return !s->get_name().empty(); }).empty();
  auto rest = root.remaining(true);
  return wants_command && !rest.empty() ? rest.front() : std::string{};
}

int usage_error(const formatter& fmt, const CLI::App* leaf, const std::string& what) {
  std::string path = path_of(leaf);
  std::fprintf(stderr, "%s: %s\n%srun '%s --help' for more\n", path.c_str(), what.c_str(),
               fmt.make_usage(leaf, path).c_str(), path.c_str());
  return usage;
}

}  // namespace

int run(int argc, char** argv) {
  auto fmt = std::make_shared<formatter>();
  CLI::App root{"skein: an actor-model runtime for AI-agent threads. The client commands (thread, entries, ...)\n"
                "talk to a running `skein serve` over its HTTP API; each names the route it calls.",
                "skein"};
  fmt->root = &root;
  fmt->label("Positionals", "arguments");
  fmt->label("REQUIRED", "(required)");
  fmt->label("Env", "env");
  root.formatter(fmt);
  root.option_defaults()->group("options");
  // Options of the root (--server, --json, ...) may follow a command's words;
  // past the noun and its verb no word is taken for another command.
  root.fallthrough();
  root.require_subcommand(1);

  globals g;
  // Checked when a client command runs (below): serve, mcp and the others never
  // read these, nor their variables.
  root.add_option("--server", g.server, "the skein serve (default http://127.0.0.1:7411)")
      ->envname("SKEIN_SERVER")
      ->type_name("URL")
      ->group(client_group);
  root.add_option("--token", g.token, "its bearer token")->envname("SKEIN_TOKEN")->type_name("T")->group(client_group);
  root.add_flag("--json", g.json, "machine-readable output")->group(client_group);
  root.add_option("--namespace", g.ns, "the namespace the server's admin acts in")
      ->envname("SKEIN_NAMESPACE")
      ->type_name("NS")
      ->group(client_group);
  root.set_version_flag("--version", std::string{"skein "} + skein::library_version(),
                        "prints the version of skein (the library's, MAJOR.MINOR.PATCH)");

  std::deque<row_app> row_apps;
  std::map<const CLI::App*, row_app*> by_app;
  for (const subcommand* sub : own_subcommands()) {
    CLI::App* app = root.add_subcommand(std::string{sub->name}, std::string{sub->summary});
    app->fallthrough(false);  // the client options are no options of these
    fmt->subs[app] = sub;
    row_apps.push_back({nullptr, sub, define(app, sub->args)});
    by_app[app] = &row_apps.back();
  }
  for (const noun& n : nouns()) {
    CLI::App* noun_app = root.add_subcommand(std::string{n.name}, std::string{n.summary});
    const auto& cmds = n.commands();
    for (const command& cmd : cmds) {
      CLI::App* app = noun_app;
      if (!cmd.verb.empty()) {
        app = noun_app->add_subcommand(std::string{cmd.verb}, std::string{cmd.summary});
        fmt->rows[app] = &cmd;
      } else {
        fmt->rows[noun_app] = &cmd;
      }
      row_apps.push_back({&cmd, nullptr, define(app, cmd.args)});
      by_app[app] = &row_apps.back();
    }
    if (!cmds.empty() && !cmds.front().verb.empty()) noun_app->require_subcommand(1);
  }
  root.footer(exit_codes_text);  // after the subcommands: they would inherit it
  CLI::App* help_word = root.add_subcommand("help", "")->group("");
  CLI::App* version_word = root.add_subcommand("version", "")->group("");
  // Every app's -h,--help among its options (an app made its own before it
  // could take the root's option defaults).
  std::vector<CLI::App*> apps{&root};
  for (size_t i = 0; i < apps.size(); ++i) {
    if (CLI::Option* h = apps[i]->get_help_ptr()) h->group("options")->description("prints this help");
    for (CLI::App* sub : apps[i]->get_subcommands({})) apps.push_back(sub);
  }

  try {
    root.parse(argc, argv);
  } catch (const CLI::CallForVersion& e) {
    std::printf("%s\n", e.what());
    return ok;
  } catch (const CLI::CallForHelp&) {
    CLI::App* leaf = leaf_of(&root);
    if (std::string word = unknown_command(root, leaf); !word.empty())
      return usage_error(*fmt, leaf, "unknown command '" + word + "'");
    std::cout << root.help();
    return ok;
  } catch (const CLI::ParseError& e) {
    CLI::App* leaf = leaf_of(&root);
    if (std::string word = unknown_command(root, leaf); !word.empty())
      return usage_error(*fmt, leaf, "unknown command '" + word + "'");
    return usage_error(*fmt, leaf, e.what());
  }
  CLI::App* leaf = leaf_of(&root);
  if (leaf == version_word) {
    std::printf("skein %s\n", skein::library_version());
    return ok;
  }
  if (leaf == help_word) {
    std::cout << fmt->make_help(&root, "skein", CLI::AppFormatMode::Normal);
    return ok;
  }
  auto it = by_app.find(leaf);
  if (it == by_app.end()) return usage_error(*fmt, leaf, "a command is required");
  const row_app& ra = *it->second;
  given a;
  for (const auto& [spec, o] : ra.options)
    if (o->count() > 0) a.values[std::string{spec->key()}] = o->results();
  if (ra.sub != nullptr) return ra.sub->run(a);
  invocation in{*ra.cmd, std::move(a)};
  http::endpoint ep;
  if (status s = http::parse_server_url(g.server, &ep); !s) return usage_error(*fmt, leaf, "--server: " + s.message());
  if (status s = validate_namespace(g.ns, "--namespace"); !g.ns.empty() && !s) return usage_error(*fmt, leaf, s.message());
  client c{http::client{ep, g.token}, g.json, {}, ""};
  if (!g.ns.empty()) c.headers.emplace_back("Skein-Namespace", g.ns);
  return ra.cmd->run(c, in);
}

}  // namespace skein::tools::cli
