// nabla-sniffd's flow sources inside a private network namespace (removed on
// exit, even on failure, with whatever rule is in it):
//  - `--check` lists the sources, exit 0 when all are active, and one
//    "WARNING:" line per inert source with exit 1;
//  - the nabla-sniffd-<pid> chain that keeps conntrack live is there while the
//    daemon runs and gone after it exits, nf_conntrack_acct is put back, and
//    a chain left by a dead sniffer is swept at start-up;
//  - a connection that lives about 1 ms between two scans is reported with
//    its exact segment and byte counts (destroy notifications), attributed to
//    the listening process, with the process's cgroup.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>

#include "nabla/common/fd.hh"
#include "nabla/common/netns.hh"
#include "nabla_test_support.hh"
#include "tier_probe.hh"

namespace {

using nabla::common::ChildProcess;
using nabla::common::FileDescriptor;
using nabla::common::NetNamespace;

std::string iptables_rules(const NetNamespace& ns) {
  return ns.run({"iptables", "-w", "5", "-S"}).stdout_text;
}

std::string acct(const NetNamespace& ns) {
  return ns.run({"cat", "/proc/sys/net/netfilter/nf_conntrack_acct"}).stdout_text;
}

std::string own_cgroup() {
  std::ifstream in("/proc/self/cgroup");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("0::", 0) == 0) return line.substr(3);
  }
  return {};
}

TEST(SnifferSources, CheckListsSourcesAndWarnsWhenInert) {
  NABLA_REQUIRE_ROOT_OR_SKIP();
  NetNamespace ns("sources");
  const auto all = ns.run({NABLA_SNIFFD_PATH, "--check"});
  EXPECT_EQ(all.exit_code, 0) << all.stdout_text << all.stderr_text;
  for (const char* source :
       {"source scan: active", "source destroy: active", "source conntrack: active"}) {
    EXPECT_NE(all.stdout_text.find(source), std::string::npos) << all.stdout_text;
  }
  EXPECT_EQ(all.stdout_text.find("WARNING"), std::string::npos) << all.stdout_text;
  // --check cleaned up after itself.
  EXPECT_EQ(iptables_rules(ns).find("nabla-sniffd-"), std::string::npos);

  const auto inert =
      ns.run({NABLA_SNIFFD_PATH, "--check", "--no-destroy-events", "--no-conntrack-rule"});
  EXPECT_EQ(inert.exit_code, 1) << inert.stdout_text;
  EXPECT_NE(inert.stdout_text.find("WARNING: source destroy inert"), std::string::npos)
      << inert.stdout_text;
  EXPECT_NE(inert.stdout_text.find("WARNING: source conntrack inert"), std::string::npos)
      << inert.stdout_text;
}

TEST(SnifferSources, ConntrackChainLivesWithTheDaemonAndStaleOnesAreSwept) {
  NABLA_REQUIRE_ROOT_OR_SKIP();
  NetNamespace ns("ctchain");
  // A chain from a sniffer that died without cleaning up: pid 1 never
  // creates one, but no live sniffer has it; a pid far above pid_max is
  // never alive.
  ns.run_checked({"iptables", "-w", "5", "-N", "nabla-sniffd-999999999"});
  ns.run_checked({"iptables", "-w", "5", "-A", "INPUT", "-j", "ACCEPT"});  // an unrelated rule
  const std::string acct_before = acct(ns);
  const std::string log = ::testing::TempDir() + "ctchain-" + std::to_string(::getpid()) + ".log";
  {
    ChildProcess sniffd({NABLA_SNIFFD_PATH, "--print", "--interval", "100ms"}, &ns, log);
    std::string rules;
    for (int i = 0; i < 50; ++i) {
      rules = iptables_rules(ns);
      if (rules.find("nabla-sniffd-" + std::to_string(sniffd.pid())) != std::string::npos) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    EXPECT_NE(rules.find("-N nabla-sniffd-" + std::to_string(sniffd.pid())), std::string::npos)
        << rules;
    EXPECT_EQ(rules.find("nabla-sniffd-999999999"), std::string::npos) << rules;
    EXPECT_EQ(acct(ns), "1\n");
    sniffd.signal(SIGTERM);
    EXPECT_EQ(sniffd.wait(std::chrono::seconds(5)), 0);
  }
  ::unlink(log.c_str());
  const std::string rules = iptables_rules(ns);
  EXPECT_EQ(rules.find("nabla-sniffd-"), std::string::npos) << rules;
  EXPECT_NE(rules.find("-A INPUT -j ACCEPT"), std::string::npos) << rules;
  // The sysctl exists only once conntrack is loaded; if it existed before,
  // it has its old value back.
  if (!acct_before.empty()) {
    EXPECT_EQ(acct(ns), acct_before);
  }
}

TEST(SnifferSources, OneMillisecondConnectionReportedWithItsCounts) {
  NABLA_REQUIRE_ROOT_OR_SKIP();
  NetNamespace ns("onems");
  FileDescriptor server = ns.socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in sa = nabla::testing::ipv4_address("127.0.0.1", 9050);
  ASSERT_EQ(::bind(server.get(), reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0);
  ASSERT_EQ(::listen(server.get(), 4), 0);
  const std::string out = ::testing::TempDir() + "onems-" + std::to_string(::getpid()) + ".json";
  ChildProcess sniffd({NABLA_SNIFFD_PATH, "--print", "--json", "--interval", "1s", "--count", "3",
                       "--no-conntrack"},
                      &ns, out);
  std::this_thread::sleep_for(std::chrono::milliseconds(1300));  // a scan saw the listener

  // Request 100 bytes, response 300 bytes, both closed: about 1 ms, far
  // inside one 1 s scan interval.
  const auto t0 = std::chrono::steady_clock::now();
  {
    FileDescriptor client = nabla::testing::connect_in(ns, "127.0.0.1", 9050);
    FileDescriptor conn(::accept4(server.get(), nullptr, nullptr, SOCK_CLOEXEC));
    ASSERT_TRUE(conn.valid());
    client.write_all(std::string(100, 'q'));
    char buf[512];
    ASSERT_EQ(::recv(conn.get(), buf, 100, MSG_WAITALL), 100);
    conn.write_all(std::string(300, 'r'));
    ASSERT_EQ(::recv(client.get(), buf, 300, MSG_WAITALL), 300);
  }
  const auto lived = std::chrono::steady_clock::now() - t0;
  ASSERT_EQ(sniffd.wait(std::chrono::seconds(10)), 0);
  std::stringstream text;
  text << std::ifstream(out).rdbuf();
  ::unlink(out.c_str());

  // The last line mentioning each end wins (later scans may repeat it).
  nlohmann::json inbound;
  nlohmann::json outbound;
  std::istringstream lines(text.str());
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line[0] != '{') continue;
    const nlohmann::json scan = nlohmann::json::parse(line);
    for (const auto& f : scan["flows"]) {
      if (f["local"]["port"] == 9050) inbound = f;
      if (f["remote"]["port"] == 9050) outbound = f;
    }
  }
  ASSERT_TRUE(inbound.is_object()) << text.str();
  ASSERT_TRUE(outbound.is_object()) << text.str();
  EXPECT_LT(lived, std::chrono::milliseconds(500));
  // Server end: the listening process (this test), with its cgroup.
  EXPECT_EQ(inbound["local"]["pid"], ::getpid());
  EXPECT_EQ(inbound["local"]["owner"], "listener");
  EXPECT_EQ(inbound["local"]["cgroup"], own_cgroup());
  EXPECT_EQ(inbound["closed_sockets"], 1);
  EXPECT_EQ(inbound["first_seen_ns"], inbound["last_seen_ns"]);  // TIME_WAIT added nothing
  EXPECT_EQ(inbound["total"]["segments_in"], 1);
  EXPECT_EQ(inbound["total"]["segments_out"], 1);
  EXPECT_EQ(inbound["total"]["bytes_in"].get<uint64_t>() / 2, 50u);  // 100, or 101 with the FIN
  EXPECT_EQ(inbound["total"]["bytes_out"], 300);
  // Client end: exact payload bytes it sent.
  EXPECT_EQ(outbound["total"]["segments_out"], 1);
  EXPECT_EQ(outbound["total"]["bytes_out"], 100);
  EXPECT_EQ(outbound["local"]["port"], 0);  // ephemeral port folded
}

}  // namespace
