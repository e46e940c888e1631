// The daemons under exactly the capabilities their systemd units give them
// (packaging/*.service.in; docs/deploy.md, "Capabilities"): root, with the
// bounding set cut down by setpriv and the inheritable and ambient sets
// empty, as CapabilityBoundingSet= does. With the documented set each
// serves a real request: nabla-injectd delays a loopback UDP link for
// `nabla inject`, nabla-sniffd names the process of another user behind a
// connection in flows.list. With one required capability dropped, each
// exits 1 with the line naming it. nabla-injectd under the unit's exact set
// (read from the unit file) duplicates packets and counts only the copies
// sent; without CAP_NET_RAW it refuses duplicate at inject.start. Started
// as plain root (by hand, as the demo and the testbed start them), each
// daemon gives up everything but that set itself, in every thread, and
// still serves. Everything runs in the test's own namespace (removed on exit
// with its rules).
#include <gtest/gtest.h>
#include <linux/capability.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
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

// A thread's capability sets and no_new_privs, from its status file.
struct CapabilityState {
  uint64_t effective = 0, permitted = 0, bounding = 0, inheritable = 0, ambient = 0;
  bool no_new_privs = false;
  bool read = false;
};

CapabilityState capability_state(const std::string& status_path) {
  CapabilityState state;
  std::ifstream status(status_path);
  std::string line;
  const auto hex = [&](const char* key, uint64_t& out) {
    if (line.rfind(key, 0) == 0)
      out = std::stoull(line.substr(std::string(key).size()), nullptr, 16);
  };
  while (std::getline(status, line)) {
    state.read = true;
    hex("CapEff:", state.effective);
    hex("CapPrm:", state.permitted);
    hex("CapBnd:", state.bounding);
    hex("CapInh:", state.inheritable);
    hex("CapAmb:", state.ambient);
    if (line.rfind("NoNewPrivs:", 0) == 0) state.no_new_privs = line.find('1') != std::string::npos;
  }
  return state;
}

// Every thread of `pid` holds exactly `mask` (effective, permitted and
// bounding), nothing inheritable or ambient, and has no_new_privs set.
// Returns how many threads were checked.
int expect_every_thread_holds_only(pid_t pid, uint64_t mask) {
  int threads = 0;
  const std::string task_dir = "/proc/" + std::to_string(pid) + "/task";
  for (const auto& task : std::filesystem::directory_iterator(task_dir)) {
    const CapabilityState s = capability_state(task.path().string() + "/status");
    if (!s.read) continue;  // a thread that ended meanwhile
    ++threads;
    const std::string where = task.path().string() + std::string(": ");
    EXPECT_EQ(s.effective, mask) << where << "CapEff";
    EXPECT_EQ(s.permitted, mask) << where << "CapPrm";
    EXPECT_EQ(s.bounding, mask) << where << "CapBnd";
    EXPECT_EQ(s.inheritable, 0u) << where << "CapInh";
    EXPECT_EQ(s.ambient, 0u) << where << "CapAmb";
    EXPECT_TRUE(s.no_new_privs) << where << "NoNewPrivs";
  }
  return threads;
}

json call_in(const NetNamespace& ns, uint16_t port, const std::string& method, json params) {
  const char* daemon = port == 7311 ? common::kInjectdKeyName : common::kSniffdKeyName;
  return common::call_in_namespace(
      ns, "127.0.0.1", port, daemon,
      common::client_key_source(std::nullopt, daemon, "127.0.0.1", port), method, params);
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

// nabla-injectd on 127.0.0.1:7311 of `ns` with the bounding set `caps`,
// its output in a temporary log; stop() ends it with SIGTERM and checks
// that it exits 0.
class CappedInjectd {
 public:
  CappedInjectd(const std::string& caps, const NetNamespace& ns, const std::string& what)
      : log_(temp_path(what + ".log")),
        daemon_(with_capabilities(caps, {NABLA_INJECTD_PATH, "--listen", "127.0.0.1:7311"}), &ns,
                log_) {}
  // Plain root with every capability, as started by hand: no setpriv.
  CappedInjectd(const NetNamespace& ns, const std::string& what)
      : log_(temp_path(what + ".log")),
        daemon_(std::vector<std::string>{NABLA_INJECTD_PATH, "--listen", "127.0.0.1:7311"}, &ns,
                log_) {}
  ~CappedInjectd() { ::unlink(log_.c_str()); }
  pid_t pid() const { return daemon_.pid(); }
  std::string log() const { return common::read_text_file(log_); }
  void stop() {
    daemon_.signal(SIGTERM);
    EXPECT_EQ(daemon_.wait(std::chrono::seconds(10)), 0) << log();
  }

 private:
  std::string log_;
  ChildProcess daemon_;
};

TEST(DaemonCapabilities, InjectdDelaysALinkWithNetAdminAlone) {
  NABLA_REQUIRE_ROOT_OR_SKIP();
  NABLA_REQUIRE_PROGRAM_OR_SKIP("setpriv");
  NetNamespace ns("capinj");
  CappedInjectd daemon(",+net_admin", ns, "injectd");
  ASSERT_TRUE(answers(ns, 7311)) << daemon.log();
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
  ASSERT_EQ(rc, 0) << text << daemon.log();
  const json r = json::parse(text);
  EXPECT_GE(r["packets"].get<int64_t>(), 10) << text;  // about 100 sent
  EXPECT_EQ(r["delayed"].get<int64_t>(), r["packets"].get<int64_t>()) << text;
  EXPECT_GE(r["actual_delay_ns"]["mean"].get<double>(), 5e6) << text;
  daemon.stop();
}

// The bounding set the packaged unit gives a daemon, as setpriv's
// ",+net_admin,+net_raw", read from packaging/<unit>.service.in.
std::string unit_capabilities(const std::string& unit, uint64_t* mask) {
  std::istringstream lines(
      common::read_text_file(std::string(NABLA_SOURCE_DIR) + "/packaging/" + unit + ".service.in"));
  std::string line;
  const std::string key = "CapabilityBoundingSet=";
  while (std::getline(lines, line)) {
    if (line.rfind(key, 0) != 0) continue;
    std::istringstream words(line.substr(key.size()));
    std::string caps;
    *mask = 0;
    for (std::string cap; words >> cap;) {
      std::string name = cap.substr(4);  // CAP_NET_RAW -> net_raw
      for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      caps += ",+" + name;
      for (const auto& [known, number] :
           std::vector<std::pair<std::string, int>>{{"CAP_NET_ADMIN", CAP_NET_ADMIN},
                                                    {"CAP_NET_RAW", CAP_NET_RAW},
                                                    {"CAP_SYS_NICE", CAP_SYS_NICE},
                                                    {"CAP_SYS_PTRACE", CAP_SYS_PTRACE},
                                                    {"CAP_DAC_READ_SEARCH", CAP_DAC_READ_SEARCH},
                                                    {"CAP_SYS_ADMIN", CAP_SYS_ADMIN}}) {
        if (cap == known) *mask |= bit(number);
      }
    }
    return caps;
  }
  ADD_FAILURE() << "no CapabilityBoundingSet= in " << unit;
  return "";
}

json duplicate_everything(uint16_t port) {
  return {{"link", "udp 127.0.0.1 -> 127.0.0.1:" + std::to_string(port)},
          {"faults", {{"duplicate", {{"probability", 1.0}}}}},
          {"lease_s", 30}};
}

// --duplicate 100% on a loopback UDP link of `ns`: every datagram arrives
// twice and `duplicated` counts exactly the copies that arrived.
void expect_every_datagram_duplicated(const NetNamespace& ns, uint16_t port,
                                      const std::string& caps) {
  FileDescriptor receiver = ns.socket(AF_INET, SOCK_DGRAM, 0);
  const sockaddr_in to = ipv4_address("127.0.0.1", port);
  ASSERT_EQ(::bind(receiver.get(), reinterpret_cast<const sockaddr*>(&to), sizeof to), 0);
  json started;
  try {
    started = call_in(ns, 7311, "inject.start", duplicate_everything(port));
  } catch (const std::exception& e) {
    FAIL() << "duplicate refused under the unit's set (" << caps << "): " << e.what();
  }
  constexpr int kSent = 50;
  FileDescriptor sender = ns.socket(AF_INET, SOCK_DGRAM, 0);
  for (int i = 0; i < kSent; ++i) {
    ::sendto(sender.get(), "x", 1, 0, reinterpret_cast<const sockaddr*>(&to), sizeof to);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  int received = 0;
  char buf[16];
  while (::recv(receiver.get(), buf, sizeof buf, MSG_DONTWAIT) > 0) ++received;
  const json stats = call_in(ns, 7311, "inject.stats", {{"id", started.at("id")}});
  call_in(ns, 7311, "inject.stop", {{"id", started.at("id")}});
  EXPECT_EQ(stats.at("packets").get<int64_t>(), kSent) << stats.dump();
  EXPECT_EQ(received, 2 * kSent) << stats.dump();
  EXPECT_EQ(stats.at("duplicated").get<int64_t>(), received - kSent) << stats.dump();
}

// Under exactly the unit's set, --duplicate 100% sends every datagram
// twice, and the daemon reports as duplicated exactly the copies that
// arrived.
TEST(DaemonCapabilities, InjectdDuplicatesUnderTheUnitsCapabilitySet) {
  NABLA_REQUIRE_ROOT_OR_SKIP();
  NABLA_REQUIRE_PROGRAM_OR_SKIP("setpriv");
  uint64_t mask = 0;
  const std::string caps = unit_capabilities("nabla-injectd", &mask);
  NetNamespace ns("capdup");
  CappedInjectd daemon(caps, ns, "dup");
  ASSERT_TRUE(answers(ns, 7311)) << daemon.log();
  EXPECT_EQ(effective_capabilities_of(daemon.pid()), mask) << caps;

  expect_every_datagram_duplicated(ns, 9502, caps);
  daemon.stop();
}

// Without CAP_NET_RAW (a daemon started by hand with CAP_NET_ADMIN alone)
// inject.start refuses duplicate, naming the capability, instead of
// reporting copies it cannot send; other injections are still served.
TEST(DaemonCapabilities, InjectdWithoutNetRawRefusesDuplicateAtStart) {
  NABLA_REQUIRE_ROOT_OR_SKIP();
  NABLA_REQUIRE_PROGRAM_OR_SKIP("setpriv");
  NetNamespace ns("capnoraw");
  CappedInjectd daemon(",+net_admin", ns, "noraw");
  ASSERT_TRUE(answers(ns, 7311)) << daemon.log();
  std::string refusal;
  try {
    call_in(ns, 7311, "inject.start", duplicate_everything(9503));
  } catch (const std::exception& e) {
    refusal = e.what();
  }
  EXPECT_NE(refusal.find("faults.duplicate: "), std::string::npos) << refusal;
  EXPECT_NE(refusal.find("CAP_NET_RAW"), std::string::npos) << refusal;
  EXPECT_TRUE(call_in(ns, 7311, "inject.list", json::object()).at("injections").empty());
  const json delay =
      call_in(ns, 7311, "inject.start",
              {{"link", "udp 127.0.0.1 -> 127.0.0.1:9503"}, {"delay", "1ms"}, {"lease_s", 30}});
  call_in(ns, 7311, "inject.stop", {{"id", delay.at("id")}});
  daemon.stop();
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

// nabla-sniffd started in `ns` with `argv` (its own flags follow) names the
// process of another user behind a connection in flows.list, holding
// exactly `mask` in every thread.
void expect_sniffd_names_another_users_process(const NetNamespace& ns,
                                               const std::vector<std::string>& argv,
                                               uint64_t mask) {
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
  std::vector<std::string> command = argv;
  for (const char* flag : {NABLA_SNIFFD_PATH, "--listen", "127.0.0.1:7312", "--interval", "100ms"})
    command.emplace_back(flag);
  ChildProcess daemon(command, &ns, log);
  ASSERT_TRUE(answers(ns, 7312)) << common::read_text_file(log);
  EXPECT_GE(expect_every_thread_holds_only(daemon.pid(), mask), 1) << common::read_text_file(log);
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

TEST(DaemonCapabilities, SniffdNamesAnotherUsersProcessWithItsThree) {
  NABLA_REQUIRE_ROOT_OR_SKIP();
  NABLA_REQUIRE_PROGRAM_OR_SKIP("setpriv");
  NetNamespace ns("capsniff");
  expect_sniffd_names_another_users_process(
      ns, with_capabilities(",+net_admin,+sys_ptrace,+dac_read_search", {}),
      bit(CAP_NET_ADMIN) | bit(CAP_SYS_PTRACE) | bit(CAP_DAC_READ_SEARCH));
}

// Started by hand as root with every capability, each daemon gives up all
// but its unit's set, in every thread (the bounding set too, so nothing it
// runs gets more), and still serves: nabla-injectd installs its rules and
// duplicates through its raw socket afterwards, nabla-sniffd names another
// user's process. sniffd scans only its own namespace here, so it keeps the
// unit's set but CAP_SYS_ADMIN, which is for entering the others.
TEST(DaemonCapabilities, InjectdStartedAsRootKeepsOnlyTheUnitsSet) {
  NABLA_REQUIRE_ROOT_OR_SKIP();
  uint64_t mask = 0;
  const std::string caps = unit_capabilities("nabla-injectd", &mask);
  ASSERT_EQ(mask, bit(CAP_NET_ADMIN) | bit(CAP_NET_RAW)) << caps;
  NetNamespace ns("caproot");
  CappedInjectd daemon(ns, "root");
  ASSERT_TRUE(answers(ns, 7311)) << daemon.log();
  EXPECT_GE(expect_every_thread_holds_only(daemon.pid(), mask), 2) << daemon.log();
  EXPECT_NE(daemon.log().find("capabilities kept: CAP_NET_ADMIN, CAP_NET_RAW"), std::string::npos)
      << daemon.log();
  expect_every_datagram_duplicated(ns, 9504, "root, dropped to" + caps);
  daemon.stop();
}

TEST(DaemonCapabilities, SniffdStartedAsRootKeepsOnlyTheUnitsSet) {
  NABLA_REQUIRE_ROOT_OR_SKIP();
  uint64_t mask = 0;
  const std::string caps = unit_capabilities("nabla-sniffd", &mask);
  ASSERT_EQ(mask, bit(CAP_NET_ADMIN) | bit(CAP_SYS_PTRACE) | bit(CAP_DAC_READ_SEARCH) |
                      bit(CAP_SYS_ADMIN))
      << caps;
  NetNamespace ns("capsniffroot");
  expect_sniffd_names_another_users_process(ns, {}, mask & ~bit(CAP_SYS_ADMIN));
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
