#include "nabla/coordinator/cli.hh"

#include <CLI/CLI.hpp>
#include <cctype>
#include <functional>
#include <iostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "nabla/coordinator/accel_command.hh"
#include "nabla/coordinator/analyze.hh"
#include "nabla/coordinator/demo.hh"
#include "nabla/coordinator/discover_command.hh"
#include "nabla/coordinator/inject_command.hh"
#include "nabla/coordinator/key_command.hh"
#include "nabla/coordinator/load_command.hh"
#include "nabla/coordinator/memlat_command.hh"
#include "nabla/coordinator/nodes_command.hh"
#include "nabla/coordinator/predict.hh"
#include "nabla/coordinator/report_command.hh"
#include "nabla/coordinator/run_command.hh"
#include "nabla/coordinator/runs_command.hh"
#include "nabla/coordinator/sql_command.hh"
#include "nabla/coordinator/testbed_command.hh"

#ifndef NABLA_VERSION
#define NABLA_VERSION "0.1.0"
#endif

namespace nabla::coordinator {
namespace {

constexpr int kUsageError = 2;

// What `nabla` alone prints: the three commands a newcomer runs first.
constexpr const char* kFirstCommands =
    "nabla: link gradients, fault injection and tail latency. Start with:\n"
    "  sudo nabla demo --report demo.html  the whole tool on this machine, with its report\n"
    "  nabla key new nabla.key             a control key for your nodes' daemons\n"
    "  nabla run campaign.toml             measure every link of your service\n"
    "every command: nabla --help\n";

// The commands CLI11 had selected when it stopped: the root app, then e.g.
// `runs`, then `list`. Filled in as parsing goes, so it is valid after a
// ParseError too.
std::vector<const CLI::App*> selected_path(const CLI::App& app) {
  std::vector<const CLI::App*> path{&app};
  while (!path.back()->get_subcommands().empty()) {
    path.push_back(path.back()->get_subcommands().front());
  }
  return path;
}

// "nabla", "nabla runs list": the prefix of a usage error and of its hint.
std::string command_name(const std::vector<const CLI::App*>& path) {
  std::string name = "nabla";
  for (std::size_t i = 1; i < path.size(); ++i) name += " " + path[i]->get_name();
  return name;
}

// "a, b or c" (conjunction "or"), "a, b and c" (conjunction "and")
std::string joined(const std::vector<std::string>& items, const char* conjunction = "or") {
  std::string out;
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += i + 1 == items.size() ? std::string(" ") + conjunction + " " : ", ";
    out += items[i];
  }
  return out;
}

std::vector<std::string> subcommand_names(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::App* sub : app.get_subcommands(std::function<bool(const CLI::App*)>{})) {
    names.push_back(sub->get_name());
  }
  return names;
}

bool is_group_without_choice(const CLI::App& app) {
  return !subcommand_names(app).empty() && app.get_subcommands().empty();
}

// A word no command took. An unknown option or command is the most specific
// cause, also when CLI11 reports something else first (for `nabla frobnicate`
// it reports the missing subcommand).
std::string describe_extras(const std::vector<const CLI::App*>& path) {
  for (auto it = path.rbegin(); it != path.rend(); ++it) {
    const std::vector<std::string> extras = (*it)->remaining(false);
    if (extras.empty()) continue;
    const std::string& word = extras.front();
    std::string what;
    if (word.size() > 1 && word[0] == '-' && !std::isdigit(static_cast<unsigned char>(word[1]))) {
      what = "unknown option '" + word + "'";
    } else if (is_group_without_choice(**it)) {
      what = "unknown command '" + word + "' (expected " + joined(subcommand_names(**it)) + ")";
    } else {
      what = "unexpected argument '" + word + "'";
    }
    if (extras.size() > 1) what += " (and " + std::to_string(extras.size() - 1) + " more)";
    return what;
  }
  return {};
}

// Required flags and arguments not given, in the deepest selected command
// that lacks any: "--node and --link are required", "missing argument 'campaign'".
std::string describe_missing(const std::vector<const CLI::App*>& path) {
  for (auto it = path.rbegin(); it != path.rend(); ++it) {
    const CLI::App& app = **it;
    std::vector<std::string> flags;
    std::vector<std::string> positionals;
    for (const CLI::Option* opt : app.get_options()) {
      if (!opt->get_required() || opt->count() > 0) continue;
      (opt->nonpositional() ? flags : positionals).push_back(opt->get_name());
    }
    if (!positionals.empty()) {
      return "missing argument '" + positionals.front() + "'" +
             (flags.empty() ? "" : " and " + joined(flags, "and"));
    }
    if (!flags.empty()) {
      return joined(flags, "and") + (flags.size() == 1 ? " is required" : " are required");
    }
    if (is_group_without_choice(app)) {
      return std::string(it + 1 == path.rend() ? "a command" : "a subcommand") + " is required (" +
             joined(subcommand_names(app)) + ")";
    }
  }
  return {};
}

// "an integer" for an option declared with an integer type, from its CLI11
// type name (INT, UINT, FLOAT, TEXT, ...).
std::string expected_value(const std::vector<const CLI::App*>& path, const std::string& name) {
  for (auto it = path.rbegin(); it != path.rend(); ++it) {
    for (const CLI::Option* opt : (*it)->get_options()) {
      if (opt->get_name() != name) continue;
      const std::string type = opt->get_type_name();
      if (type == "INT") return "an integer";
      if (type == "UINT") return "a non-negative integer";
      if (type == "FLOAT") return "a number";
      return type.empty() ? "another value" : type;
    }
  }
  return "another value";
}

// CLI11's own sentence, reworded where it does not name the flag first or
// reads like a type dump.
std::string describe_cli11(const CLI::ParseError& e, const std::vector<const CLI::App*>& path) {
  std::string what = e.what();
  // "Could not convert: --run = abc"
  const std::string conversion = "Could not convert: ";
  if (what.rfind(conversion, 0) == 0) {
    const std::string rest = what.substr(conversion.size());
    const auto eq = rest.find(" = ");
    if (eq != std::string::npos) {
      const std::string name = rest.substr(0, eq);
      return name + ": expected " + expected_value(path, name) + ", got '" + rest.substr(eq + 3) +
             "'";
    }
  }
  // "--run: 1 required INT missing": the flag was last, without its value.
  const auto colon = what.find(": ");
  if (dynamic_cast<const CLI::ArgumentMismatch*>(&e) != nullptr && colon != std::string::npos &&
      what.size() > 8 && what.compare(what.size() - 8, 8, " missing") == 0) {
    return what.substr(0, colon) + ": missing its value";
  }
  // "The following ...": lower-case a capitalised first word, not a name
  // such as "FILE".
  if (what.size() > 1 && std::islower(static_cast<unsigned char>(what[1]))) {
    what[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(what[0])));
  }
  return what;
}

// Every CLI11 parse error is a usage error: exit 2, one line
// "nabla <command>: <what>", then one hint line.
int usage_error(const CLI::App& app, const CLI::ParseError& e) {
  const std::vector<const CLI::App*> path = selected_path(app);
  std::string what = describe_extras(path);
  if (what.empty() && dynamic_cast<const CLI::RequiredError*>(&e) != nullptr) {
    what = describe_missing(path);
  }
  if (what.empty()) what = describe_cli11(e, path);
  const std::string name = command_name(path);
  std::cerr << name << ": " << what << "\nrun '" << name << " --help' for usage\n";
  return kUsageError;
}

}  // namespace

int run_cli(int argc, char** argv) {
  CLI::App app{"nabla: link-gradient measurement, fault injection and tail-latency testbed"};
  app.set_version_flag("--version", NABLA_VERSION);
  app.require_subcommand(1);
  // In the order of the work, as docs/cli.md's command table lists them: try
  // it, set up the nodes, measure, read the results; then the tools around
  // the measurements. Every summary is a lower-case verb phrase without a
  // full stop.
  register_demo_command(app);
  register_key_command(app);
  register_nodes_command(app);
  register_discover_command(app);
  register_run_command(app);
  register_runs_command(app);
  register_sql_command(app);
  register_report_command(app);
  register_predict_command(app);
  register_load_command(app);
  register_inject_command(app);
  register_analyze_command(app);
  register_testbed_command(app);
  register_accel_command(app);
  register_memlat_command(app);
  if (argc <= 1) {
    std::cout << kFirstCommands;
    return 0;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {
    return app.exit(e);  // --help, --help-all, --version: printed, exit 0
  } catch (const CLI::RuntimeError& e) {
    return e.get_exit_code();  // a command's own result, already reported
  } catch (const CLI::ParseError& e) {
    return usage_error(app, e);
  } catch (const std::invalid_argument& e) {
    // A flag value the command itself refused (e.g. `--rate: must be > 0`).
    std::cerr << command_name(selected_path(app)) << ": " << e.what() << '\n';
    return kUsageError;
  } catch (const std::exception& e) {
    std::cerr << "nabla: error: " << e.what() << '\n';
    return 1;
  }
  return 0;
}

}  // namespace nabla::coordinator
