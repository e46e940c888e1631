// nabla-sniffd's flow sources inside a private network namespace (removed on
// exit, even on failure, with whatever rule is in it):
//  - `--check` lists the sources, exit 0 when all are active, and one
//    "WARNING:" line per inert source with exit 1;
//  - the nabla-sniffd-<pid> chain that keeps conntrack live is there while the
//    daemon runs and gone after it exits, nf_conntrack_acct is put back, and
//    a chain left by a dead sniffer is swept at start-up;
//  - a connection that lives about 1 ms between two scans is reported with
//    its exact segment and byte counts (destroy notifications), attributed to
//    the listening process, with the process's cgroup;
//  - a client process that connects once for 1 ms and exits is attributed to
//    its cgroup (a cgroup of its own, removed on exit), and to its pid and
//    comm when the sniffer found it alive;
//  - a sniffer scanning another namespace runs conntrack there too: --check
//    says so per namespace, a live UDP flow in it has counts before it ends,
//    and the chain it added there is gone after it exits.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "nabla/common/fd.hh"
#include "nabla/common/netns.hh"
#include "nabla/common/text_file.hh"
#include "nabla/sniffer/cgroups.hh"
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

// A TCP listener on 127.0.0.1:PORT inside `ns`; invalid when it failed.
FileDescriptor listen_in(const NetNamespace& ns, uint16_t port) {
  FileDescriptor server = ns.socket(AF_INET, SOCK_STREAM, 0);
  const sockaddr_in sa = nabla::testing::ipv4_address("127.0.0.1", port);
  if (::bind(server.get(), reinterpret_cast<const sockaddr*>(&sa), sizeof sa) != 0 ||
      ::listen(server.get(), 4) != 0) {
    return FileDescriptor();
  }
  return server;
}

// The JSON lines of a --print --json output file (removed), flattened.
std::vector<nlohmann::json> printed_flows(const std::string& path) {
  std::stringstream text;
  text << std::ifstream(path).rdbuf();
  ::unlink(path.c_str());
  std::vector<nlohmann::json> flows;
  std::istringstream lines(text.str());
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line[0] != '{') continue;
    const nlohmann::json scan = nlohmann::json::parse(line);
    for (const auto& f : scan["flows"]) flows.push_back(f);
  }
  return flows;
}

// A cgroup v2 directory of the test's own, removed on exit (once empty).
class TestCgroup {
 public:
  TestCgroup() {
    const std::string mount =
        nabla::sniffer::cgroup2_mount(nabla::common::read_text_file("/proc/self/mountinfo"));
    if (mount.empty()) return;
    path_ = "/nabla-test-" + std::to_string(::getpid());
    dir_ = mount + path_;
    if (::mkdir(dir_.c_str(), 0755) != 0) dir_.clear();
  }
  ~TestCgroup() {
    if (dir_.empty()) return;
    for (int i = 0; i < 50 && ::rmdir(dir_.c_str()) != 0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));  // its process is exiting
    }
  }
  TestCgroup(const TestCgroup&) = delete;
  TestCgroup& operator=(const TestCgroup&) = delete;
  bool usable() const { return !dir_.empty(); }
  const std::string& path() const { return path_; }  // as /proc/PID/cgroup writes it
  const std::string& dir() const { return dir_; }

 private:
  std::string path_;
  std::string dir_;
};

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

// kill -9 leaves nf_conntrack_acct on; the next sniffer in the namespace
// restores the value the chain records before it sets its own, and at its
// clean exit leaves the namespace as it was before the first.
TEST(SnifferSources, AcctTurnedOnByACrashedSnifferIsRestoredByTheNext) {
  NABLA_REQUIRE_ROOT_OR_SKIP();
  NetNamespace ns("ctcrash");
  // Load conntrack in the namespace, so the sysctl exists, and turn it off.
  ns.run_checked({"iptables", "-w", "5", "-A", "INPUT", "-m", "conntrack", "--ctstate", "INVALID",
                  "-j", "ACCEPT"});
  ns.run_checked({"sh", "-c", "echo 0 > /proc/sys/net/netfilter/nf_conntrack_acct"});
  ASSERT_EQ(acct(ns), "0\n");
  const std::string log = ::testing::TempDir() + "ctcrash-" + std::to_string(::getpid()) + ".log";
  {
    ChildProcess first({NABLA_SNIFFD_PATH, "--print", "--interval", "100ms"}, &ns, log);
    for (int i = 0; i < 50 && acct(ns) != "1\n"; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    ASSERT_EQ(acct(ns), "1\n");
    first.signal(SIGKILL);
    first.wait(std::chrono::seconds(5));
  }
  EXPECT_EQ(acct(ns), "1\n");  // what kill -9 leaves
  const auto second = ns.run({NABLA_SNIFFD_PATH, "--print", "--interval", "100ms", "--count", "1"});
  EXPECT_EQ(second.exit_code, 0) << second.stderr_text;
  EXPECT_NE(second.stderr_text.find("restored /proc/sys/net/netfilter/nf_conntrack_acct=0"),
            std::string::npos)
      << second.stderr_text;
  EXPECT_EQ(acct(ns), "0\n");
  EXPECT_EQ(iptables_rules(ns).find("nabla-sniffd-"), std::string::npos) << iptables_rules(ns);
  ::unlink(log.c_str());
}

TEST(SnifferSources, OneMillisecondConnectionReportedWithItsCounts) {
  NABLA_REQUIRE_ROOT_OR_SKIP();
  NetNamespace ns("onems");
  FileDescriptor server = listen_in(ns, 9050);
  ASSERT_TRUE(server.valid());
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

TEST(SnifferSources, ShortLivedClientAttributedToItsCgroup) {
  NABLA_REQUIRE_ROOT_OR_SKIP();
  TestCgroup cgroup;
  if (!cgroup.usable()) GTEST_SKIP() << "no writable cgroup v2 hierarchy";
  NetNamespace ns("shortcg");
  FileDescriptor server = listen_in(ns, 9051);
  ASSERT_TRUE(server.valid());
  const std::string out = ::testing::TempDir() + "shortcg-" + std::to_string(::getpid()) + ".json";
  ChildProcess sniffd({NABLA_SNIFFD_PATH, "--print", "--json", "--interval", "1s", "--count", "3"},
                      &ns, out);
  std::this_thread::sleep_for(std::chrono::milliseconds(1300));  // chain in place, a scan done

  // A client that joins its own cgroup, connects, sends, lives 1 ms and exits.
  ChildProcess client({"bash", "-c",
                       "echo $$ > " + cgroup.dir() +
                           "/cgroup.procs && exec 3<>/dev/tcp/127.0.0.1/9051 && "
                           "printf hello >&3 && sleep 0.001"},
                      &ns);
  FileDescriptor conn(::accept4(server.get(), nullptr, nullptr, SOCK_CLOEXEC));
  ASSERT_TRUE(conn.valid());
  char buf[16];
  EXPECT_EQ(::recv(conn.get(), buf, 5, MSG_WAITALL), 5);
  EXPECT_EQ(client.wait(std::chrono::seconds(5)), 0);
  ASSERT_EQ(sniffd.wait(std::chrono::seconds(10)), 0);

  nlohmann::json outbound;
  const auto flows = printed_flows(out);
  for (const auto& f : flows) {
    if (f["remote"]["port"] == 9051) outbound = f;
  }
  ASSERT_TRUE(outbound.is_object()) << nlohmann::json(flows).dump();
  const auto& local = outbound["local"];
  EXPECT_EQ(local["cgroup"], cgroup.path()) << outbound.dump();
  EXPECT_NE(local["cgroup_id"], 0) << outbound.dump();
  // Found alive (its own socket), or gone before the sniffer could look.
  if (local["owner"] == "socket") {
    EXPECT_EQ(local["pid"], client.pid()) << outbound.dump();
    // bash execs its last command: the process is named sleep by then.
    EXPECT_TRUE(local["comm"] == "bash" || local["comm"] == "sleep") << outbound.dump();
  } else {
    EXPECT_EQ(local["owner"], "gone-before-scan") << outbound.dump();
    EXPECT_EQ(local["pid"], 0) << outbound.dump();
  }
  EXPECT_EQ(outbound["total"]["bytes_out"], 5);
}

// Lines of `text` that start with `prefix`.
int lines_starting(const std::string& text, const std::string& prefix) {
  int n = 0;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) n += line.rfind(prefix, 0) == 0 ? 1 : 0;
  return n;
}

// Each namespace scanned costs sockets, a flow table and a conntrack chain:
// beyond --max-namespaces the selected ones wait, counted and logged.
TEST(SnifferSources, AtMostMaxNamespacesAreScanned) {
  NABLA_REQUIRE_ROOT_OR_SKIP();
  NetNamespace node("capnode");
  NetNamespace a("capa");
  NetNamespace b("capb");
  NetNamespace c("capc");
  const std::string three = a.name() + "," + b.name() + "," + c.name();
  const auto all = node.run({NABLA_SNIFFD_PATH, "--check", "--netns", three});
  EXPECT_EQ(lines_starting(all.stdout_text, "netns @"), 3) << all.stdout_text;
  const auto capped =
      node.run({NABLA_SNIFFD_PATH, "--check", "--netns", three, "--max-namespaces", "1"});
  EXPECT_EQ(lines_starting(capped.stdout_text, "netns @"), 1) << capped.stdout_text;
  EXPECT_NE(capped.stderr_text.find(
                "not scanning 2 network namespace(s): 1 already scanned (--max-namespaces)"),
            std::string::npos)
      << capped.stderr_text;
}

TEST(SnifferSources, ConntrackRunsInEveryScannedNamespace) {
  NABLA_REQUIRE_ROOT_OR_SKIP();
  NetNamespace node("ctnode");
  NetNamespace other("ctother");
  const auto check = node.run({NABLA_SNIFFD_PATH, "--check", "--netns", other.name()});
  EXPECT_NE(check.stdout_text.find("netns @" + other.name() +
                                   ": scan active, destroy active, conntrack active"),
            std::string::npos)
      << check.stdout_text << check.stderr_text;

  // A UDP request/response pair in the other namespace, 20 exchanges a
  // second for the whole test: it never ends while the sniffer runs, so its
  // counts can only come from the live entry.
  FileDescriptor server = other.socket(AF_INET, SOCK_DGRAM, 0);
  FileDescriptor client = other.socket(AF_INET, SOCK_DGRAM, 0);
  sockaddr_in sa = nabla::testing::ipv4_address("127.0.0.1", 9052);
  ASSERT_EQ(::bind(server.get(), reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0);
  const std::string out = ::testing::TempDir() + "ctns-" + std::to_string(::getpid()) + ".json";
  ChildProcess sniffd({NABLA_SNIFFD_PATH, "--print", "--json", "--interval", "500ms", "--count",
                       "4", "--netns", other.name()},
                      &node, out);
  std::this_thread::sleep_for(std::chrono::milliseconds(400));  // the chains are in place
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(1800);
  int exchanges = 0;
  while (std::chrono::steady_clock::now() < until) {
    char buf[64];
    ASSERT_EQ(::sendto(client.get(), "ping", 4, 0, reinterpret_cast<sockaddr*>(&sa), sizeof sa), 4);
    sockaddr_in from{};
    socklen_t len = sizeof from;
    ASSERT_EQ(
        ::recvfrom(server.get(), buf, sizeof buf, 0, reinterpret_cast<sockaddr*>(&from), &len), 4);
    ASSERT_EQ(::sendto(server.get(), "pong!", 5, 0, reinterpret_cast<sockaddr*>(&from), len), 5);
    ASSERT_EQ(::recv(client.get(), buf, sizeof buf, 0), 5);
    ++exchanges;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_EQ(sniffd.wait(std::chrono::seconds(10)), 0);

  uint64_t served = 0;
  const auto flows = printed_flows(out);
  for (const auto& f : flows) {
    if (f["proto"] != "udp" || f["local"]["port"] != 9052) continue;
    EXPECT_EQ(f["netns"]["name"], other.name());
    EXPECT_EQ(f["local"]["pid"], ::getpid());
    served = std::max(served, f["total"]["segments_in"].get<uint64_t>());
  }
  // Every exchange the sniffer's last dump could see: the ones sent after
  // the chain existed, up to the last scan (no more than were sent).
  EXPECT_GE(served, 10u) << nlohmann::json(flows).dump();
  EXPECT_LE(served, static_cast<uint64_t>(exchanges));
  EXPECT_EQ(iptables_rules(other).find("nabla-sniffd-"), std::string::npos)
      << iptables_rules(other);
}

}  // namespace
