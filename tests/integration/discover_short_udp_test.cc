// `nabla discover` across two testbed hosts (cli, srv; namespaces removed on
// exit, even on failure) finds flows a periodic scan alone would miss:
//  - a TCP connection that opens, exchanges one message and closes within
//    50 ms, far shorter than the sniffers' 300 ms scan interval (caught by
//    conntrack events, enabled by an iptables rule inside each namespace);
//  - one UDP datagram to a bound receiver.
// Both show up as cli → srv links with the server-side process known.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "nabla/common/fd.hh"
#include "nabla/common/netns.hh"
#include "nabla/testbed/testbed.hh"
#include "nabla_test_support.hh"
#include "sniffed_testbed.hh"
#include "tier_probe.hh"

namespace {

using nabla::common::ChildProcess;
using nabla::common::FileDescriptor;
using nabla::testbed::Testbed;
using nabla::testbed::TestbedSpec;
using Clock = std::chrono::steady_clock;
using nlohmann::json;

TEST(DiscoverShortUdp, FindsASub50msConnectionAndAUdpFlow) {
  NABLA_REQUIRE_ROOT_OR_SKIP();
  nabla::common::sweep_stale_namespaces();
  TestbedSpec spec;
  spec.subnet = "10.213.9.0/24";
  for (const char* name : {"cli", "srv"}) spec.hosts.push_back({name, {}});
  Testbed tb(spec);
  const auto& cli = tb.host("cli");
  const auto& srv = tb.host("srv");
  for (const auto& h : tb.hosts()) {
    // Conntrack tracks a namespace only when a rule needs it (this rule
    // lives and dies with the namespace).
    h->ns.run_checked({"iptables", "-w", "-A", "INPUT", "-m", "conntrack", "--ctstate",
                       "NEW,ESTABLISHED", "-j", "ACCEPT"});
  }
  ChildProcess& tier = tb.start("srv", {NABLA_TIER_PATH, "--listen", srv.address + ":9003",
                                        "--workers", "1", "--url", "* service=fixed:10us"});
  nabla::testing::connect_in(cli.ns, srv.address, 9003);  // ready (no data: no link)

  FileDescriptor udp_rx = srv.ns.socket(AF_INET, SOCK_DGRAM, 0);
  sockaddr_in rx = nabla::testing::ipv4_address(srv.address, 9999);
  ASSERT_EQ(::bind(udp_rx.get(), reinterpret_cast<sockaddr*>(&rx), sizeof rx), 0);

  const nabla::testing::KeyFile key("discover-short");
  nabla::testing::start_sniffers(tb, NABLA_SNIFFD_PATH, key, "300ms", cli.ns);
  std::this_thread::sleep_for(std::chrono::milliseconds(400));  // a scan saw the receiver

  // Connect, one request and its response, close: all within 50 ms.
  const auto t0 = Clock::now();
  {
    FileDescriptor shorty = nabla::testing::connect_in(cli.ns, srv.address, 9003);
    ASSERT_TRUE(nabla::testing::http_get_ok(shorty));
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_LT(Clock::now() - t0, std::chrono::milliseconds(50));

  FileDescriptor udp_tx = cli.ns.socket(AF_INET, SOCK_DGRAM, 0);
  sockaddr_in tx = nabla::testing::ipv4_address(cli.address, 0);
  ASSERT_EQ(::bind(udp_tx.get(), reinterpret_cast<sockaddr*>(&tx), sizeof tx), 0);
  ASSERT_EQ(::sendto(udp_tx.get(), "x", 1, 0, reinterpret_cast<sockaddr*>(&rx), sizeof rx), 1);
  pollfd pfd{udp_rx.get(), POLLIN, 0};
  ASSERT_EQ(::poll(&pfd, 1, 2000), 1);  // it arrived
  // Conntrack-noted flows are published with the next scan: wait two.
  std::this_thread::sleep_for(std::chrono::milliseconds(700));

  // --node without a port: the default (7312) is part of what this covers.
  const auto result =
      nabla::testing::run_discover(NABLA_PATH, cli.ns,
                                   {"--key-file", key.path(), "--for", "0s", "--json", "--node",
                                    "cli=" + cli.address, "--node", "srv=" + srv.address},
                                   "discover-short");
  ASSERT_TRUE(result.has_value());
  const json links = result->value("links", json::array());

  const json* tcp = nullptr;
  const json* udp = nullptr;
  for (const json& l : links) {
    // Only the test's ports: no control connection, nothing else.
    for (const char* end : {"src", "dst"}) {
      const int port = l[end]["port"];
      EXPECT_TRUE(port == 0 || port == 9003 || port == 9999) << l.dump();
    }
    if (l["src"]["host"] == "cli" && l["dst"]["host"] == "srv") {
      if (l["proto"] == "tcp" && l["dst"]["port"] == 9003) tcp = &l;
      if (l["proto"] == "udp" && l["dst"]["port"] == 9999) udp = &l;
    }
  }
  ASSERT_NE(tcp, nullptr) << links.dump(2);
  EXPECT_EQ((*tcp)["dst"]["pid"], tier.pid());
  EXPECT_EQ((*tcp)["dst"]["comm"], "nabla-tier");
  EXPECT_EQ((*tcp)["src"]["port"], 0);
  ASSERT_NE(udp, nullptr) << links.dump(2);
  EXPECT_EQ((*udp)["dst"]["pid"], ::getpid());
  EXPECT_EQ((*udp)["src"]["port"], 0);
}

}  // namespace
