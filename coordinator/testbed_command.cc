// `nabla testbed up|down`; see testbed_command.hh.
#include "nabla/coordinator/testbed_command.hh"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <ostream>
#include <system_error>
#include <thread>

#include "nabla/common/clock.hh"
#include "nabla/common/stop_signals.hh"
#include "nabla/common/units.hh"
#include "nabla/coordinator/text_table.hh"
#include "nabla/testbed/testbed.hh"

namespace nabla::coordinator {
namespace {

using nlohmann::json;

void write_state(const std::string& path, const json& state) {
  const std::filesystem::path p(path);
  if (p.has_parent_path()) std::filesystem::create_directories(p.parent_path());
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp);
    if (!out) throw std::system_error(errno, std::generic_category(), "open " + tmp);
    out << state.dump(2) << '\n';
    if (!out) throw std::system_error(errno, std::generic_category(), "write " + tmp);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    throw std::system_error(errno, std::generic_category(), "rename " + tmp);
  }
}

// True when `pid` is alive (not a zombie awaiting its parent's wait) and
// runs a program called "nabla".
bool is_nabla_process(pid_t pid) {
  std::ifstream stat_file("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  if (!stat_file || !std::getline(stat_file, stat)) return false;
  // "pid (comm) state ...": comm may hold spaces or parentheses.
  const size_t open = stat.find('(');
  const size_t close = stat.rfind(')');
  if (open == std::string::npos || close == std::string::npos || close + 2 >= stat.size()) {
    return false;
  }
  const char state = stat[close + 2];
  return stat.substr(open + 1, close - open - 1) == "nabla" && state != 'Z' && state != 'X';
}

}  // namespace

int run_testbed_up(const std::string& spec_path, const std::string& state_path,
                   std::optional<std::int64_t> for_ns, std::ostream& out) {
  const testbed::TestbedSpec spec = testbed::load_testbed_spec(spec_path);
  common::sweep_stale_namespaces();
  testbed::Testbed testbed(spec);
  json state = testbed.describe();
  state["pid"] = ::getpid();
  state["spec"] = spec_path;
  write_state(state_path, state);

  TextTable t({"host", "address", "namespace"});
  for (const auto& h : testbed.hosts()) t.add_row({h->name, h->address, h->ns.name()});
  t.print(out);
  for (const auto& p : state["processes"]) {
    out << "started " << p["argv0"].get<std::string>() << " on " << p["host"].get<std::string>()
        << " (pid " << p["pid"] << ")\n";
  }
  out << "state in " << state_path << "; run commands with `ip netns exec NAMESPACE ...`;"
      << " Ctrl-C or `nabla testbed down` removes it\n"
      << std::flush;

  // Signals are blocked only now, after the children were started (they must
  // not inherit a blocked SIGTERM); one arriving earlier kills this process
  // and leaves namespaces that `nabla testbed down` sweeps.
  {
    common::StopSignals signals(common::StopSignals::Mode::kBlock);
    if (for_ns) {
      signals.wait_for(*for_ns);
    } else {
      signals.wait();
    }
  }
  ::unlink(state_path.c_str());
  out << "testbed removed\n";
  return 0;  // ~Testbed tears everything down
}

int run_testbed_down(const std::string& state_path, std::ostream& out) {
  json state = json::object();
  std::ifstream in(state_path);
  if (in) {
    try {
      in >> state;
    } catch (const std::exception& e) {
      out << "state file " << state_path << " unreadable (" << e.what()
          << "); sweeping leftovers only\n";
      state = json::object();
    }
  }
  if (state.contains("pid") && state["pid"].is_number_integer()) {
    const pid_t pid = state["pid"].get<pid_t>();
    if (pid != ::getpid() && is_nabla_process(pid)) {
      ::kill(pid, SIGTERM);
      // Its destructors remove the testbed; wait up to 10 s for that.
      const int64_t deadline = common::monotonic_ns() + 10'000'000'000;
      while (is_nabla_process(pid) && common::monotonic_ns() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
      out << "stopped nabla testbed up (pid " << pid << ")\n";
    }
  }
  const size_t removed = testbed::remove_testbed_leftovers(state);
  ::unlink(state_path.c_str());
  out << "removed " << removed << " leftover namespace(s)\n";
  return 0;
}

void register_testbed_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("testbed", "build or remove a namespace testbed");
  cmd->require_subcommand(1);
  auto spec = std::make_shared<std::string>();
  auto state = std::make_shared<std::string>(kDefaultTestbedState);
  auto for_text = std::make_shared<std::string>();
  auto* up = cmd->add_subcommand("up", "build the hosts of SPEC.toml and hold them until Ctrl-C");
  up->add_option("spec", *spec, "testbed spec (TOML)")->required()->check(CLI::ExistingFile);
  up->add_option("--state", *state, "state file")->default_val(kDefaultTestbedState);
  up->add_option("--for", *for_text, "tear down after this long (default: on Ctrl-C)");
  up->callback([spec, state, for_text] {
    std::optional<std::int64_t> for_ns;
    if (!for_text->empty()) {
      try {
        for_ns = common::parse_duration_ns(*for_text);
      } catch (const std::invalid_argument& e) {
        throw std::invalid_argument(std::string("--for: ") + e.what());
      }
    }
    const int code = run_testbed_up(*spec, *state, for_ns, std::cout);
    if (code != 0) throw CLI::RuntimeError(code);
  });
  auto* down = cmd->add_subcommand("down", "remove nabla's testbed, including crashed leftovers");
  down->add_option("--state", *state, "state file")->default_val(kDefaultTestbedState);
  down->callback([state] {
    const int code = run_testbed_down(*state, std::cout);
    if (code != 0) throw CLI::RuntimeError(code);
  });
}

}  // namespace nabla::coordinator
