// The daemons under exactly the capabilities their systemd units give them
// (packaging/*.service.in; docs/deploy.md, "Capabilities"): root, with the
// bounding set cut down by setpriv and the inheritable and ambient sets
// empty, as CapabilityBoundingSet= does. With the documented set each
// serves a real request: nabla-injectd delays a loopback UDP link for
// `nabla inject`, nabla-sniffd names the process of another user behind a
// connection in flows.list. With one required capability dropped, each
// exits 1 with the line naming it. Everything runs in the test's own
// namespace (removed on exit with its rules).
#include <gtest/gtest.h>
#include <linux/capability.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "nabla/common/fd.hh"
#include "nabla/common/local_keys.hh"
#include "nabla/common/netns.hh"
#include "nabla/common/rpc_in_namespace.hh"
#include "nabla/common/text_file.hh"
#include "nabla_test_support.hh"
#include "tier_probe.hh"

namespace nabla::testing {
namespace {

using common::ChildProcess;
using common::FileDescriptor;
using common::NetNamespace;
using nlohmann::json;

// argv under setpriv: root, bounding set = `caps` (",+net_admin,..." or "").
std::vector<std::string> with_capabilities(const std::string& caps,
                                           const std::vector<std::string>& argv) {
  std::vector<std::string> out = {"setpriv", "--inh-caps=-all", "--ambient-caps=-all",
                                  "--bounding-set=-all" + caps};
  out.insert(out.end(), argv.begin(), argv.end());
  return out;
}

uint64_t bit(int capability) {
  return uint64_t{1} << capability;
}

// CapEff of a running process, from /proc/PID/status.
uint64_t effective_capabilities_of(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("CapEff:", 0) == 0) return std::stoull(line.substr(7), nullptr, 16);
  }
  ADD_FAILURE() << "no CapEff for pid " << pid;
  return 0;
}

json call_in(const NetNamespace& ns, uint16_t port, const std::string& method, json params) {
  const char* daemon = port == 7311 ? common::kInjectdKeyName : common::kSniffdKeyName;
  return common::call_in_namespace(
      ns, "127.0.0.1", port, common::client_key_source(std::nullopt, daemon, "127.0.0.1", port),
      method, params);
}

// Waits up to 5 s for the daemon to answer daemon.info.
bool answers(const NetNamespace& ns, uint16_t port) {
  for (int i = 0; i < 100; ++i) {
    try {
      call_in(ns, port, "daemon.info", json::object());
      return true;
    } catch (const std::exception&) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  return false;
}

std::string temp_path(const std::string& what) {
  return ::testing::TempDir() + "nabla-caps-" + what + "-" + std::to_string(::getpid());
}

TEST(DaemonCapabilities, InjectdDelaysALinkWithNetAdminAlone) {
  NABLA_REQUIRE_ROOT_OR_SKIP();
  NABLA_REQUIRE_PROGRAM_OR_SKIP("setpriv");
  NetNamespace ns("capinj");
  const std::string log = temp_path("injectd.log");
  ChildProcess daemon(
      with_capabilities(",+net_admin", {NABLA_INJECTD_PATH, "--listen", "127.0.0.1:7311"}), &ns,
      log);
  ASSERT_TRUE(answers(ns, 7311)) << common::read_text_file(log);
  EXPECT_EQ(effective_capabilities_of(daemon.pid()), bit(CAP_NET_ADMIN));

  // UDP to a bound receiver, 100/s, for longer than the injection.
  FileDescriptor receiver = ns.socket(AF_INET, SOCK_DGRAM, 0);
  const sockaddr_in to = ipv4_address("127.0.0.1", 9500);
  ASSERT_EQ(::bind(receiver.get(), reinterpret_cast<const sockaddr*>(&to), sizeof to), 0);
  std::atomic<bool> sending{true};
  FileDescriptor sender = ns.socket(AF_INET, SOCK_DGRAM, 0);
  std::thread traffic([&] {
    while (sending) {
      ::sendto(sender.get(), "x", 1, 0, reinterpret_cast<const sockaddr*>(&to), sizeof to);
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  });
  const std::string out = temp_path("inject.json");
  int rc = -1;
  {
    ChildProcess cli({NABLA_PATH, "inject", "--node", "127.0.0.1:7311", "--link",
                      "udp 127.0.0.1 -> 127.0.0.1:9500", "--delay", "5ms", "--for", "1s", "--json"},
                     &ns, out);
    rc = cli.wait(std::chrono::seconds(15));
  }
  sending = false;
  traffic.join();
  const std::string text = common::read_text_file(out);
  ::unlink(out.c_str());
  ASSERT_EQ(rc, 0) << text << common::read_text_file(log);
  const json r = json::parse(text);
  EXPECT_GE(r["packets"].get<int64_t>(), 10) << text;  // about 100 sent
  EXPECT_EQ(r["delayed"].get<int64_t>(), r["packets"].get<int64_t>()) << text;
  EXPECT_GE(r["actual_delay_ns"]["mean"].get<double>(), 5e6) << text;

  daemon.signal(SIGTERM);
  EXPECT_EQ(daemon.wait(std::chrono::seconds(10)), 0) << common::read_text_file(log);
  ::unlink(log.c_str());
}

TEST(DaemonCapabilities, InjectdWithoutACapabilityNamesIt) {
  NABLA_REQUIRE_ROOT_OR_SKIP();
  NABLA_REQUIRE_PROGRAM_OR_SKIP("setpriv");
  NetNamespace ns("capinjx");
  const auto none = ns.run(with_capabilities("", {NABLA_INJECTD_PATH}));
  EXPECT_EQ(none.exit_code, 1);
  EXPECT_EQ(none.stderr_text,
            "nabla-injectd: missing capability CAP_NET_ADMIN (needed for NFQUEUE and iptables)");
  // SCHED_FIFO is asked for: CAP_SYS_NICE as well.
  const auto no_nice =
      ns.run(with_capabilities(",+net_admin", {NABLA_INJECTD_PATH, "--rt-priority", "10"}));
  EXPECT_EQ(no_nice.exit_code, 1);
  EXPECT_EQ(no_nice.stderr_text.rfind("nabla-injectd: missing capability CAP_SYS_NICE", 0), 0u)
      << no_nice.stderr_text;
}

// The flows.list entry of the client end of the connection to port 9501,
// once it has an owner; null before.
json owned_client_flow(const json& flows) {
  for (const json& f : flows["flows"]) {
    if (f["proto"] == "tcp" && f["remote"]["port"] == 9501 &&
        f["local"]["pid"].get<int64_t>() != 0) {
      return f;
    }
  }
  return json();
}

TEST(DaemonCapabilities, SniffdNamesAnotherUsersProcessWithItsThree) {
  NABLA_REQUIRE_ROOT_OR_SKIP();
  NABLA_REQUIRE_PROGRAM_OR_SKIP("setpriv");
  NetNamespace ns("capsniff");
  FileDescriptor listener = ns.socket(AF_INET, SOCK_STREAM, 0);
  const sockaddr_in at = ipv4_address("127.0.0.1", 9501);
  ASSERT_EQ(::bind(listener.get(), reinterpret_cast<const sockaddr*>(&at), sizeof at), 0);
  ASSERT_EQ(::listen(listener.get(), 4), 0);
  // The client end belongs to nobody's process (its /proc/PID/fd is mode
  // 0500 and owned by nobody: root reads it only with the capabilities). It
  // sends one message: flows.list reports flows that carried one.
  ChildProcess client({"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "bash", "-c",
                       "exec 3<>/dev/tcp/127.0.0.1/9501; echo hello >&3; exec sleep 30"},
                      &ns);
  FileDescriptor accepted(::accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC));
  ASSERT_TRUE(accepted.valid());

  const std::string log = temp_path("sniffd.log");
  ChildProcess daemon(
      with_capabilities(",+net_admin,+sys_ptrace,+dac_read_search",
                        {NABLA_SNIFFD_PATH, "--listen", "127.0.0.1:7312", "--interval", "100ms"}),
      &ns, log);
  ASSERT_TRUE(answers(ns, 7312)) << common::read_text_file(log);
  EXPECT_EQ(effective_capabilities_of(daemon.pid()),
            bit(CAP_NET_ADMIN) | bit(CAP_SYS_PTRACE) | bit(CAP_DAC_READ_SEARCH));
  json flow;
  for (int i = 0; i < 50 && flow.is_null(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    flow = owned_client_flow(call_in(ns, 7312, "flows.list", json::object()));
  }
  ASSERT_FALSE(flow.is_null()) << common::read_text_file(log);
  EXPECT_EQ(flow["local"]["pid"].get<int64_t>(), client.pid()) << flow.dump();
  EXPECT_EQ(flow["local"]["comm"], "sleep") << flow.dump();

  daemon.signal(SIGTERM);
  EXPECT_EQ(daemon.wait(std::chrono::seconds(10)), 0) << common::read_text_file(log);
  client.signal(SIGTERM);
  client.wait(std::chrono::seconds(5));
  ::unlink(log.c_str());
}

TEST(DaemonCapabilities, SniffdWithoutACapabilityNamesIt) {
  NABLA_REQUIRE_ROOT_OR_SKIP();
  NABLA_REQUIRE_PROGRAM_OR_SKIP("setpriv");
  NetNamespace ns("capsniffx");
  const std::vector<std::pair<std::string, std::string>> dropped = {
      {",+sys_ptrace,+dac_read_search", "CAP_NET_ADMIN"},
      {",+net_admin,+dac_read_search", "CAP_SYS_PTRACE"},
      {",+net_admin,+sys_ptrace", "CAP_DAC_READ_SEARCH"}};
  for (const auto& [caps, missing] : dropped) {
    const auto r = ns.run(with_capabilities(caps, {NABLA_SNIFFD_PATH}));
    EXPECT_EQ(r.exit_code, 1) << caps;
    EXPECT_EQ(
        r.stderr_text.rfind("nabla-sniffd: missing capability " + missing + " (needed for ", 0), 0u)
        << caps << ": " << r.stderr_text;
  }
  // Without conntrack, CAP_NET_ADMIN is not needed.
  const auto no_conntrack = ns.run(with_capabilities(
      ",+sys_ptrace,+dac_read_search",
      {NABLA_SNIFFD_PATH, "--no-conntrack", "--print", "--count", "1", "--interval", "10ms"}));
  EXPECT_EQ(no_conntrack.exit_code, 0) << no_conntrack.stderr_text;
}

}  // namespace
}  // namespace nabla::testing
