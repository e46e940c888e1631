// The units' ExecStopPost (nabla-injectd --cleanup, nabla-sniffd --cleanup)
// run as systemd would run it after a daemon died by SIGKILL: the command
// line is read from the unit file (the installed one when the package is,
// else the one this build installs), its $VARIABLES filled in from the
// unit's EnvironmentFile, and run in the dead daemon's private network
// namespace. It removes that daemon's chains and nothing else: not a live
// daemon's, not another kind's, not somebody else's chain of a similar
// name. While a daemon of the kind runs there it removes nothing.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "nabla/common/netns.hh"
#include "nabla/common/text_file.hh"
#include "nabla_test_support.hh"

namespace nabla::testing {
namespace {

namespace fs = std::filesystem;
using common::ChildProcess;
using common::NetNamespace;
using common::run_command;

bool package_installed() {
  const char* dir = std::getenv("NABLA_TEST_BIN_DIR");
  return dir != nullptr && *dir != '\0';
}

// The unit file systemd would read: the package's under package-smoke, else
// the one `cmake --install` puts in place (configured in the build tree).
std::string unit_file(const std::string& unit) {
  if (package_installed()) return "/usr/lib/systemd/system/" + unit;
  return std::string(NABLA_BINARY_DIR) + "/packaging/" + unit;
}

std::string setting(const std::string& text, const std::string& key) {
  const std::string prefix = "\n" + key + "=";
  const auto at = text.find(prefix);
  if (at == std::string::npos) return "";
  const auto start = at + prefix.size();
  return text.substr(start, text.find('\n', start) - start);
}

// KEY=VALUE lines of an EnvironmentFile (comments and blanks skipped). The
// installed one when there is one, else the package's template.
std::map<std::string, std::string> environment_file(const std::string& path) {
  const std::string file = fs::exists(path) ? path
                                            : std::string(NABLA_SOURCE_DIR) + "/packaging/" +
                                                  fs::path(path).filename().string();
  std::map<std::string, std::string> env;
  std::istringstream lines(common::read_text_file(file));
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line[0] == '#') continue;
    const auto eq = line.find('=');
    if (eq != std::string::npos) env[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return env;
}

// A command line as systemd splits it: words at spaces; "${NAME}" one word,
// "$NAME" the value's words (none when empty). argv[0] is the installed
// program under package-smoke, else this build's.
std::vector<std::string> command_line(const std::string& line,
                                      const std::map<std::string, std::string>& env,
                                      const std::string& built_program) {
  std::vector<std::string> argv;
  std::istringstream words(line);
  for (std::string word; words >> word;) {
    if (word.rfind("${", 0) == 0 && word.back() == '}') {
      argv.push_back(env.count(word.substr(2, word.size() - 3))
                         ? env.at(word.substr(2, word.size() - 3))
                         : "");
    } else if (word[0] == '$') {
      std::istringstream value(env.count(word.substr(1)) ? env.at(word.substr(1)) : "");
      for (std::string v; value >> v;) argv.push_back(v);
    } else {
      argv.push_back(word);
    }
  }
  if (!argv.empty() && !package_installed()) argv[0] = built_program;
  return argv;
}

std::vector<std::string> exec_stop_post(const std::string& unit, const std::string& built_program) {
  const std::string text = common::read_text_file(unit_file(unit));
  const std::string line = setting(text, "ExecStopPost");
  EXPECT_NE(line, "") << unit_file(unit) << " has no ExecStopPost";
  return command_line(line, environment_file(setting(text, "EnvironmentFile")), built_program);
}

// `iptables -S` of `table` in `ns`, both families.
std::string chains(const NetNamespace& ns, const std::string& table) {
  return ns.run({"iptables", "-w", "5", "-t", table, "-S"}).stdout_text +
         ns.run({"ip6tables", "-w", "5", "-t", table, "-S"}).stdout_text;
}

bool has_chain(const NetNamespace& ns, const std::string& table, const std::string& chain) {
  return chains(ns, table).find("-N " + chain + "\n") != std::string::npos;
}

bool wait_for(const std::function<bool()>& condition) {
  for (int i = 0; i < 200; ++i) {
    if (condition()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

std::string temp_path(const std::string& what) {
  return ::testing::TempDir() + "nabla-cleanup-" + what + "-" + std::to_string(::getpid());
}

// A chain of `table` named like one of nabla's that belongs to nobody dead.
void add_chain(const NetNamespace& ns, const std::string& table, const std::string& chain) {
  ns.run_checked({"iptables", "-w", "5", "-t", table, "-N", chain});
}

const std::string kInjectd = program_under_test("nabla-injectd", NABLA_INJECTD_PATH);
const std::string kSniffd = program_under_test("nabla-sniffd", NABLA_SNIFFD_PATH);

TEST(DaemonCleanup, InjectdsExecStopPostRemovesTheChainsOfAKilledInjectdOnly) {
  NABLA_REQUIRE_ROOT_OR_SKIP();
  common::sweep_stale_namespaces();
  NetNamespace ns("clinj");
  ns.set_up("lo");
  const std::vector<std::string> cleanup = exec_stop_post("nabla-injectd.service", kInjectd);
  ASSERT_GE(cleanup.size(), 2u);
  EXPECT_EQ(cleanup[1], "--cleanup");
  // Somebody else's: a sniffd's chain (this live process's pid) and a
  // mangle chain whose name starts like injectd's.
  const std::string sniffd_chain = "nabla-sniffd-" + std::to_string(::getpid());
  add_chain(ns, "filter", sniffd_chain);
  add_chain(ns, "mangle", "NABLA-OUTBOUND");

  const std::string log = temp_path("injectd.log");
  {
    ChildProcess daemon({kInjectd, "--listen", "127.0.0.1:7311"}, &ns, log);
    ASSERT_TRUE(wait_for([&] { return has_chain(ns, "mangle", "NABLA-FWD"); }))
        << common::read_text_file(log);
    // While it runs, the cleanup removes nothing and names it.
    const auto live = run_command(cleanup, &ns);
    EXPECT_EQ(live.exit_code, 0) << live.stderr_text;
    EXPECT_NE(live.stdout_text.find("removed nothing: another nabla-injectd (pid " +
                                    std::to_string(daemon.pid()) + ")"),
              std::string::npos)
        << live.stdout_text;
    EXPECT_TRUE(has_chain(ns, "mangle", "NABLA-IN"));

    daemon.signal(SIGKILL);
    EXPECT_EQ(daemon.wait(std::chrono::seconds(10)), 128 + SIGKILL);
  }
  ::unlink(log.c_str());
  for (const char* chain : {"NABLA-OUT", "NABLA-IN", "NABLA-FWD"}) {
    ASSERT_TRUE(has_chain(ns, "mangle", chain)) << chain << " should outlive kill -9";
  }

  const auto r = run_command(cleanup, &ns);
  EXPECT_EQ(r.exit_code, 0) << r.stderr_text;
  EXPECT_NE(r.stdout_text.find("nabla-injectd --cleanup: removed "), std::string::npos)
      << r.stdout_text;
  const std::string mangle = chains(ns, "mangle");
  for (const char* gone : {"-N NABLA-OUT\n", "-N NABLA-IN\n", "-N NABLA-FWD\n", "-j NABLA-"}) {
    EXPECT_EQ(mangle.find(gone), std::string::npos) << gone << " left:\n" << mangle;
  }
  EXPECT_TRUE(has_chain(ns, "mangle", "NABLA-OUTBOUND")) << mangle;
  EXPECT_TRUE(has_chain(ns, "filter", sniffd_chain));

  // Again: nothing left to remove, and it says so.
  const auto again = run_command(cleanup, &ns);
  EXPECT_EQ(again.exit_code, 0);
  EXPECT_NE(again.stdout_text.find("no NABLA chains left behind"), std::string::npos)
      << again.stdout_text;
  ns.run({"iptables", "-w", "5", "-X", sniffd_chain});
  ns.run({"iptables", "-w", "5", "-t", "mangle", "-X", "NABLA-OUTBOUND"});
}

TEST(DaemonCleanup, SniffdsExecStopPostRemovesTheChainOfAKilledSniffdOnly) {
  NABLA_REQUIRE_ROOT_OR_SKIP();
  common::sweep_stale_namespaces();
  NetNamespace ns("clsnf");
  ns.set_up("lo");
  const std::vector<std::string> cleanup = exec_stop_post("nabla-sniffd.service", kSniffd);
  ASSERT_GE(cleanup.size(), 2u);
  EXPECT_EQ(cleanup[1], "--cleanup");
  // A live sniffd's chain (this process's pid, as if it were one) and an
  // injectd's chain stay.
  const std::string live_chain = "nabla-sniffd-" + std::to_string(::getpid());
  add_chain(ns, "filter", live_chain);
  add_chain(ns, "mangle", "NABLA-OUT");

  const std::string log = temp_path("sniffd.log");
  std::string killed_chain;
  {
    ChildProcess daemon({kSniffd, "--listen", "127.0.0.1:7312", "--interval", "100ms"}, &ns, log);
    killed_chain = "nabla-sniffd-" + std::to_string(daemon.pid());
    ASSERT_TRUE(wait_for([&] { return has_chain(ns, "filter", killed_chain); }))
        << common::read_text_file(log);
    const auto live = run_command(cleanup, &ns);
    EXPECT_EQ(live.exit_code, 0) << live.stderr_text;
    EXPECT_NE(live.stdout_text.find("removed nothing: another nabla-sniffd (pid " +
                                    std::to_string(daemon.pid()) + ")"),
              std::string::npos)
        << live.stdout_text;
    EXPECT_TRUE(has_chain(ns, "filter", killed_chain));
    daemon.signal(SIGKILL);
    EXPECT_EQ(daemon.wait(std::chrono::seconds(10)), 128 + SIGKILL);
  }
  ::unlink(log.c_str());
  ASSERT_TRUE(has_chain(ns, "filter", killed_chain)) << "the chain should outlive kill -9";

  const auto r = run_command(cleanup, &ns);
  EXPECT_EQ(r.exit_code, 0) << r.stderr_text;
  EXPECT_NE(r.stdout_text.find("nabla-sniffd --cleanup: removed "), std::string::npos)
      << r.stdout_text;
  EXPECT_FALSE(has_chain(ns, "filter", killed_chain)) << chains(ns, "filter");
  EXPECT_TRUE(has_chain(ns, "filter", live_chain));
  EXPECT_TRUE(has_chain(ns, "mangle", "NABLA-OUT"));
  ns.run({"iptables", "-w", "5", "-X", live_chain});
  ns.run({"iptables", "-w", "5", "-t", "mangle", "-X", "NABLA-OUT"});
}

}  // namespace
}  // namespace nabla::testing
