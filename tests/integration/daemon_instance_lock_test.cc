// One nabla-injectd and one nabla-sniffd per network namespace
// (common/instance_lock.hh): a second daemon of a kind started in the same
// namespace, on another port (and, for injectd, another queue), exits 1
// with one line naming the first one's pid, and the first one's chains,
// injection and service are intact. The lock dies with its holder, kill -9
// included, and a daemon in another namespace is not affected. Everything
// runs in the test's own namespaces, removed on exit with their rules.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "nabla/common/netns.hh"
#include "nabla/common/text_file.hh"
#include "nabla/testbed/injector_testbed.hh"
#include "nabla_test_support.hh"

namespace nabla::testing {
namespace {

using common::ChildProcess;
using common::NetNamespace;
using testbed::InjectorTestbed;

std::string temp_path(const std::string& what) {
  return ::testing::TempDir() + "nabla-lock-" + what + "-" + std::to_string(::getpid());
}

// Runs `argv` in `ns` and waits at most 10 s for it to exit (a daemon that
// did not refuse is stopped); its exit code and output.
std::pair<int, std::string> run_second(const std::vector<std::string>& argv,
                                       const NetNamespace& ns) {
  const std::string log = temp_path("second.log");
  int rc = -1;
  {
    ChildProcess second(argv, &ns, log);
    rc = second.wait(std::chrono::seconds(10));
    if (rc == -1) second.signal(SIGTERM);
  }
  std::string text = common::read_text_file(log);
  ::unlink(log.c_str());
  return {rc, text};
}

void expect_one_refusal_line(const std::string& text, const std::string& daemon, pid_t first) {
  ASSERT_FALSE(text.empty());
  EXPECT_EQ(text.find('\n'), text.size() - 1) << text;  // exactly one line
  EXPECT_EQ(text.rfind(daemon + ": another " + daemon + " (pid " + std::to_string(first) +
                           ") already runs in this network namespace",
                       0),
            0u)
      << text;
}

// Lines of `iptables-save` (all tables) in `ns` that name nabla.
std::vector<std::string> nabla_lines(const NetNamespace& ns) {
  std::vector<std::string> out;
  std::istringstream lines(ns.run({"iptables-save"}).stdout_text);
  for (std::string line; std::getline(lines, line);) {
    if (line.find("NABLA") != std::string::npos || line.find("nabla") != std::string::npos) {
      out.push_back(line);
    }
  }
  return out;
}

bool wait_for_line(const std::string& log, const std::string& needle) {
  for (int i = 0; i < 200; ++i) {
    if (common::read_text_file(log).find(needle) != std::string::npos) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

TEST(DaemonInstanceLock, SecondInjectdInTheNamespaceRefusesAndLeavesTheFirstsChains) {
  NABLA_REQUIRE_ROOT_OR_SKIP();
  InjectorTestbed bed;
  bed.start_daemon();
  const std::string id =
      bed.call("inject.start",
               {{"link", "udp 10.77.0.1 -> 10.77.0.2:9000"}, {"delay", "5ms"}, {"lease_s", 30}})
          .at("id");
  const std::vector<std::string> before = bed.nabla_rules();
  ASSERT_FALSE(before.empty());

  const auto [rc, text] = run_second(
      {NABLA_INJECTD_PATH, "--listen", "127.0.0.1:7411", "--queue-num", "50"}, bed.sender());
  EXPECT_EQ(rc, 1) << text;
  expect_one_refusal_line(text, "nabla-injectd", bed.daemon_pid());
  EXPECT_EQ(bed.nabla_rules(), before);  // not one chain or rule touched
  EXPECT_EQ(bed.call("inject.list", nlohmann::json::object()).at("injections").size(), 1u);
  EXPECT_EQ(bed.call("inject.stats", {{"id", id}}).at("id"), id);

  // Another namespace is another lock: an injectd on the receiver starts.
  const std::string other_log = temp_path("other.log");
  {
    ChildProcess other({NABLA_INJECTD_PATH, "--listen", "127.0.0.1:7311"}, &bed.receiver(),
                       other_log);
    EXPECT_TRUE(wait_for_line(other_log, "listening on")) << common::read_text_file(other_log);
    other.signal(SIGTERM);
    EXPECT_EQ(other.wait(std::chrono::seconds(10)), 0) << common::read_text_file(other_log);
  }
  ::unlink(other_log.c_str());

  // The lock dies with its holder, kill -9 too: the next daemon starts (and
  // removes the stale chains, as the only one there).
  bed.kill_daemon_hard();
  bed.start_daemon();
  EXPECT_TRUE(bed.call("inject.list", nlohmann::json::object()).at("injections").empty());
  bed.stop_daemon();
  EXPECT_TRUE(bed.nabla_rules().empty());
}

TEST(DaemonInstanceLock, SecondSniffdInTheNamespaceRefusesAndLeavesTheFirstsChain) {
  NABLA_REQUIRE_ROOT_OR_SKIP();
  common::sweep_stale_namespaces();
  NetNamespace ns("lksnf");
  ns.set_up("lo");
  const std::string log = temp_path("sniffd.log");
  ChildProcess first({NABLA_SNIFFD_PATH, "--listen", "127.0.0.1:7312", "--interval", "100ms"}, &ns,
                     log);
  ASSERT_TRUE(wait_for_line(log, "listening on")) << common::read_text_file(log);
  const std::vector<std::string> before = nabla_lines(ns);
  ASSERT_FALSE(before.empty()) << "no conntrack chain of the first sniffd";

  const auto [rc, text] =
      run_second({NABLA_SNIFFD_PATH, "--listen", "127.0.0.1:7412", "--interval", "100ms"}, ns);
  EXPECT_EQ(rc, 1) << text;
  expect_one_refusal_line(text, "nabla-sniffd", first.pid());
  EXPECT_EQ(nabla_lines(ns), before);
  EXPECT_TRUE(first.running());

  first.signal(SIGTERM);
  EXPECT_EQ(first.wait(std::chrono::seconds(10)), 0) << common::read_text_file(log);
  ::unlink(log.c_str());
}

}  // namespace
}  // namespace nabla::testing
