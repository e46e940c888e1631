// `nabla testbed up|down` end to end (namespaces are nb-<pid>-*-tb-*, all
// removed by the test even on failure through `down` and a final sweep):
//  - up builds the hosts of a spec, addresses them inside their namespaces
//    only (the root namespace gets no testbed address), starts the spec's
//    processes there and writes the state file; hosts reach each other;
//  - down stops a running up, which removes everything and exits 0;
//  - after up is SIGKILLed (a crash), down still removes its namespaces and
//    the processes it had started.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>

#include "nabla/common/netns.hh"
#include "nabla_test_support.hh"

namespace {

using nabla::common::ChildProcess;
using nabla::common::run_command;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

bool exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

// Waits up to 10 s for `up` to write its state file.
json wait_state(const std::string& path) {
  const auto deadline = Clock::now() + std::chrono::seconds(10);
  while (Clock::now() < deadline) {
    std::ifstream in(path);
    if (in) {
      std::stringstream text;
      text << in.rdbuf();
      return json::parse(text.str());
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ADD_FAILURE() << "no state file " << path;
  return json::object();
}

// Can host `from` open a TCP connection to addr:port? (bash's /dev/tcp.)
bool can_connect(const std::string& from_ns, const std::string& addr, int port) {
  // Retries for up to 5 s: the tier may still be starting.
  const auto deadline = Clock::now() + std::chrono::seconds(5);
  while (Clock::now() < deadline) {
    const auto r = run_command({"ip", "netns", "exec", from_ns, "bash", "-c",
                                "exec 3<>/dev/tcp/" + addr + "/" + std::to_string(port)});
    if (r.exit_code == 0) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

class TestbedCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "testbed-cli-" + std::to_string(::getpid());
    spec_ = dir_ + "-spec.toml";
    state_ = dir_ + "-state.json";
    std::ofstream(spec_) << "subnet = \"10.213.7.0/24\"\n"
                            "[[host]]\nname = \"a\"\n"
                            "[[host]]\nname = \"b\"\n"
                            "[[host.process]]\n"
                            "argv = [\"" NABLA_TIER_PATH
                            "\", \"--listen\", \"{b}:9001\", "
                            "\"--workers\", \"1\", \"--url\", \"* service=fixed:10us\"]\n";
  }
  void TearDown() override {
    run_command({NABLA_PATH, "testbed", "down", "--state", state_});
    ::unlink(spec_.c_str());
    ::unlink(state_.c_str());
  }
  std::string dir_, spec_, state_;
};

TEST_F(TestbedCli, UpBuildsHostsAndDownRemovesThem) {
  NABLA_REQUIRE_ROOT_OR_SKIP();
  ChildProcess up({NABLA_PATH, "testbed", "up", spec_, "--state", state_, "--for", "25s"}, nullptr,
                  "/dev/null");
  const json state = wait_state(state_);
  ASSERT_EQ(state["hosts"].size(), 2u);
  const std::string ns_a = state["hosts"][0]["namespace"];
  const std::string ns_b = state["hosts"][1]["namespace"];
  EXPECT_EQ(state["hosts"][0]["address"], "10.213.7.1");
  EXPECT_EQ(state["hosts"][1]["address"], "10.213.7.2");
  EXPECT_NE(ns_a.find("-tb-a"), std::string::npos);
  for (const std::string& ns : {ns_a, ns_b, state["switch"].get<std::string>()}) {
    EXPECT_TRUE(exists("/run/netns/" + ns)) << ns;
  }
  ASSERT_EQ(state["processes"].size(), 1u);
  EXPECT_EQ(state["processes"][0]["host"], "b");
  // a reaches b's tier through the bridge; the root namespace has no testbed address.
  EXPECT_TRUE(can_connect(ns_a, "10.213.7.2", 9001));
  EXPECT_EQ(run_command({"ip", "-4", "addr"}).stdout_text.find("10.213.7."), std::string::npos);

  const auto down = run_command({NABLA_PATH, "testbed", "down", "--state", state_});
  EXPECT_EQ(down.exit_code, 0) << down.stderr_text;
  EXPECT_EQ(up.wait(std::chrono::seconds(10)), 0);
  for (const std::string& ns : {ns_a, ns_b, state["switch"].get<std::string>()}) {
    EXPECT_FALSE(exists("/run/netns/" + ns)) << ns;
  }
  EXPECT_FALSE(exists(state_));
  EXPECT_FALSE(exists("/proc/" + std::to_string(state["processes"][0]["pid"].get<int>())));
}

TEST_F(TestbedCli, DownCleansUpAfterACrashedUp) {
  NABLA_REQUIRE_ROOT_OR_SKIP();
  json state;
  {
    ChildProcess up({NABLA_PATH, "testbed", "up", spec_, "--state", state_, "--for", "25s"},
                    nullptr, "/dev/null");
    state = wait_state(state_);
    ASSERT_EQ(state["processes"].size(), 1u);
    up.signal(SIGKILL);  // the crash: no destructor runs in `up`
    EXPECT_EQ(up.wait(std::chrono::seconds(5)), 128 + SIGKILL);
  }
  const std::string ns_b = state["hosts"][1]["namespace"];
  const int tier_pid = state["processes"][0]["pid"].get<int>();
  ASSERT_TRUE(exists("/run/netns/" + ns_b));  // left behind
  ASSERT_TRUE(exists("/proc/" + std::to_string(tier_pid)));

  const auto down = run_command({NABLA_PATH, "testbed", "down", "--state", state_});
  EXPECT_EQ(down.exit_code, 0) << down.stderr_text;
  EXPECT_NE(down.stdout_text.find("removed"), std::string::npos) << down.stdout_text;
  for (const auto& h : state["hosts"]) {
    EXPECT_FALSE(exists("/run/netns/" + h["namespace"].get<std::string>()));
  }
  EXPECT_FALSE(exists("/run/netns/" + state["switch"].get<std::string>()));
  // The orphaned tier was killed (it is reparented, so it may linger as a
  // zombie of init for a moment: wait for /proc to drop it).
  const auto deadline = Clock::now() + std::chrono::seconds(5);
  while (exists("/proc/" + std::to_string(tier_pid)) && Clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_FALSE(exists("/proc/" + std::to_string(tier_pid)));
}

}  // namespace
