// A node with containers, built as container runtimes build it: a "node"
// namespace with a bridge, and two "container" namespaces joined to it by
// veth pairs (all nb-<pid>-* namespaces, removed on exit even on failure),
// a nabla-tier server in one container and a client in the other.
//  - one nabla-sniffd in the node namespace, told to scan the two containers,
//    reports the link between them with both processes, and `nabla
//    discover` labels each end with its container's namespace;
//  - a nabla-injectd in the node namespace started with --netns CONTAINER
//    keeps its control socket in the node and its chains in the container:
//    `nabla inject --netns CONTAINER` delays that container's connections,
//    an injection naming the other container is refused, and the chains are
//    gone once the daemon exits.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "nabla/common/netns.hh"
#include "nabla/common/text_file.hh"
#include "nabla_test_support.hh"
#include "sniffed_testbed.hh"
#include "tier_probe.hh"

namespace nabla::testing {
namespace {

using common::ChildProcess;
using common::NetNamespace;
using common::VethPair;
using nlohmann::json;

constexpr const char* kClientIp = "10.88.0.2";
constexpr const char* kServerIp = "10.88.0.3";
constexpr uint16_t kServerPort = 8080;

// The node and its two containers on one bridge.
struct ContainerNode {
  NetNamespace node{"node"};
  NetNamespace client{"ctr-client"};
  NetNamespace server{"ctr-server"};
  std::unique_ptr<VethPair> client_link;
  std::unique_ptr<VethPair> server_link;
  std::unique_ptr<ChildProcess> tier;  // the server, in its container

  ContainerNode() {
    node.run_checked({"ip", "link", "add", "br0", "type", "bridge"});
    node.set_up("br0");
    client_link = std::make_unique<VethPair>(node, "vclient", client, "eth0");
    server_link = std::make_unique<VethPair>(node, "vserver", server, "eth0");
    for (const char* veth : {"vclient", "vserver"}) {
      node.run_checked({"ip", "link", "set", veth, "master", "br0"});
      node.set_up(veth);
    }
    client.add_address("eth0", std::string(kClientIp) + "/24");
    client.set_up("eth0");
    server.add_address("eth0", std::string(kServerIp) + "/24");
    server.set_up("eth0");
    tier = std::make_unique<ChildProcess>(
        std::vector<std::string>{NABLA_TIER_PATH, "--listen", std::string(kServerIp) + ":8080",
                                 "--workers", "1", "--url", "* service=fixed:100us"},
        &server);
  }
};

std::string temp_path(const std::string& tag) {
  return ::testing::TempDir() + "netns-" + tag + "-" + std::to_string(::getpid()) + ".out";
}

// The time one TCP connect from the client container to the server takes:
// a SYN and its SYN-ACK, one round trip.
double connect_ms(const ContainerNode& n) {
  const common::FileDescriptor fd = n.client.socket(AF_INET, SOCK_STREAM, 0);
  const sockaddr_in sa = ipv4_address(kServerIp, kServerPort);
  const auto t0 = std::chrono::steady_clock::now();
  const int rc = ::connect(fd.get(), reinterpret_cast<const sockaddr*>(&sa), sizeof sa);
  const auto t1 = std::chrono::steady_clock::now();
  EXPECT_EQ(rc, 0);
  return std::chrono::duration<double, std::milli>(t1 - t0).count();
}

std::vector<double> connect_times_ms(const ContainerNode& n, int count) {
  std::vector<double> ms;
  for (int i = 0; i < count; ++i) ms.push_back(connect_ms(n));
  std::sort(ms.begin(), ms.end());
  return ms;
}

// Waits up to 10 s for `text` to appear in the file at `path`.
bool wait_for_text(const std::string& path, const std::string& text) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < deadline) {
    if (common::read_text_file(path).find(text) != std::string::npos) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

const json* find_link(const json& links, pid_t src_pid, pid_t dst_pid) {
  for (const json& l : links) {
    if (l["src"]["pid"] == src_pid && l["dst"]["pid"] == dst_pid) return &l;
  }
  return nullptr;
}

std::string nabla_chains(const NetNamespace& ns) {
  std::istringstream rules(ns.run({"iptables-save"}).stdout_text);
  std::string found;
  for (std::string line; std::getline(rules, line);) {
    if (line.find("NABLA") != std::string::npos) found += line + "\n";
  }
  return found;
}

TEST(NetnsContainers, OneSnifferOnTheNodeLabelsEachEndWithItsContainer) {
  NABLA_REQUIRE_ROOT_OR_SKIP();
  ContainerNode n;
  const KeyFile key("netns-sniff");
  ChildProcess resident({"sleep", "60"}, &n.client);  // a process living in the client container
  const std::string log = temp_path("sniffd");
  ChildProcess sniffd(
      {NABLA_SNIFFD_PATH, "--listen", "127.0.0.1:7312", "--key-file", key.path(), "--interval",
       "100ms", "--netns", "self," + n.client.name() + "," + n.server.name()},
      &n.node, log);
  connect_in(n.node, "127.0.0.1", kSniffdPort);
  const common::FileDescriptor conn = connect_in(n.client, kServerIp, kServerPort);
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(http_get_ok(conn));

  const auto result = run_discover(
      NABLA_PATH, n.node,
      {"--node", "node=127.0.0.1", "--key-file", key.path(), "--for", "700ms", "--json"},
      "netns-discover");
  ASSERT_TRUE(result.has_value());
  const json& links = (*result)["links"];
  const json* request = find_link(links, ::getpid(), n.tier->pid());
  ASSERT_NE(request, nullptr) << links.dump(2) << common::read_text_file(log);
  EXPECT_EQ((*request)["dst"]["comm"], "nabla-tier");
  EXPECT_EQ((*request)["dst"]["port"], kServerPort);
  EXPECT_GE((*request)["segments"].get<uint64_t>(), 5u);
  EXPECT_EQ((*request)["src"]["netns"]["name"], n.client.name());
  EXPECT_EQ((*request)["dst"]["netns"]["name"], n.server.name());
  EXPECT_NE((*request)["src"]["netns"]["inode"], (*request)["dst"]["netns"]["inode"]);
  const json* response = find_link(links, n.tier->pid(), ::getpid());
  ASSERT_NE(response, nullptr) << links.dump(2);
  EXPECT_EQ((*response)["src"]["netns"]["name"], n.server.name());
  sniffd.signal(SIGTERM);
  EXPECT_EQ(sniffd.wait(std::chrono::seconds(5)), 0);
  const std::string text = common::read_text_file(log);
  EXPECT_NE(text.find("scanning namespace " + n.client.name()), std::string::npos) << text;
  ::unlink(log.c_str());
}

TEST(NetnsContainers, AnInjectorStartedWithNetnsDelaysThatContainerOnly) {
  NABLA_REQUIRE_ROOT_OR_SKIP();
  ContainerNode n;
  const KeyFile key("netns-inject");
  connect_in(n.client, kServerIp, kServerPort);  // the server listens
  const std::string daemon_log = temp_path("injectd");
  auto injectd = std::make_unique<ChildProcess>(
      std::vector<std::string>{NABLA_INJECTD_PATH, "--listen", "127.0.0.1:7311", "--key-file",
                               key.path(), "--netns", n.client.name()},
      &n.node, daemon_log);
  // The line comes once the chains are made and the methods registered.
  ASSERT_TRUE(wait_for_text(daemon_log, "nabla-injectd listening on"))
      << common::read_text_file(daemon_log);
  EXPECT_EQ(nabla_chains(n.node), "");  // the chains live in the container
  EXPECT_NE(nabla_chains(n.client), "");

  const std::vector<double> before = connect_times_ms(n, 10);
  auto inject = [&](const std::string& netns, const std::string& out) {
    return std::make_unique<ChildProcess>(
        std::vector<std::string>{NABLA_PATH, "inject", "--node", "127.0.0.1:7311", "--key-file",
                                 key.path(), "--link",
                                 std::string("tcp ") + kClientIp + " -> " + kServerIp + ":8080",
                                 "--delay", "30ms", "--for", "2s", "--netns", netns},
        &n.node, out);
  };
  const std::string refused_out = temp_path("refused");
  EXPECT_EQ(inject(n.server.name(), refused_out)->wait(std::chrono::seconds(10)), 1);
  EXPECT_NE(common::read_text_file(refused_out).find("netns: this nabla-injectd injects in"),
            std::string::npos)
      << common::read_text_file(refused_out);
  ::unlink(refused_out.c_str());

  const std::string out = temp_path("inject");
  auto cli = inject(n.client.name(), out);
  // The first connect that takes the delay shows the injection is in place.
  bool delayed = false;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!delayed && std::chrono::steady_clock::now() < deadline) {
    delayed = connect_ms(n) >= 30.0;
    if (!delayed) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_TRUE(delayed) << common::read_text_file(out) << common::read_text_file(daemon_log);
  const std::vector<double> during = connect_times_ms(n, 5);
  EXPECT_EQ(cli->wait(std::chrono::seconds(10)), 0) << common::read_text_file(out);
  // Every SYN waited the 30 ms; undelayed connects take a fraction of that.
  EXPECT_GE(during.front(), 30.0);
  EXPECT_LT(before[before.size() / 2], 15.0);
  EXPECT_GE(during[during.size() / 2] - before[before.size() / 2], 20.0);

  injectd->signal(SIGTERM);
  EXPECT_EQ(injectd->wait(std::chrono::seconds(5)), 0) << common::read_text_file(daemon_log);
  EXPECT_EQ(nabla_chains(n.client), "");
  EXPECT_EQ(nabla_chains(n.node), "");
  ::unlink(out.c_str());
  ::unlink(daemon_log.c_str());
}

}  // namespace
}  // namespace nabla::testing
