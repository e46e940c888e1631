// nabla-sniffd discovers a web → app → db chain of nabla-tier processes in a
// private network namespace (loopback inside it only; the namespace, its
// conntrack-enabling iptables rule and every child process are removed on
// exit, even on failure):
//  - every tier's inbound and outbound flow, with the right pid and comm at
//    its end and client ports folded to 0;
//  - segment counts that follow the call patterns (app→db carries 3× the
//    messages of web→app for serial:3);
//  - a TCP connection that opens, sends one message and closes in < 50 ms
//    (caught by conntrack, attributed to the listening tier);
//  - a UDP flow.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "nabla/common/fd.hh"
#include "nabla/common/netns.hh"
#include "nabla_test_support.hh"
#include "tier_probe.hh"

namespace {

using nabla::common::ChildProcess;
using nabla::common::FileDescriptor;
using nabla::common::NetNamespace;
using Clock = std::chrono::steady_clock;

constexpr uint16_t kWeb = 9001;
constexpr uint16_t kApp = 9002;
constexpr uint16_t kDb = 9003;
constexpr uint16_t kUdp = 9999;
constexpr int kRequests = 20;

struct Flow {
  std::string proto, local_addr, remote_addr, comm, direction;
  int local_port = -1, remote_port = -1, pid = -1;
  uint64_t segs_out = 0, segs_in = 0, conntrack_events = 0;
};

// Latest view of every flow over all JSON lines nabla-sniffd printed.
std::vector<Flow> read_flows(const std::string& path) {
  std::map<std::string, Flow> latest;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] != '{') continue;
    const auto j = nlohmann::json::parse(line);
    for (const auto& f : j["flows"]) {
      Flow flow;
      flow.proto = f["proto"];
      flow.local_addr = f["local"]["addr"];
      flow.local_port = f["local"]["port"];
      flow.pid = f["local"]["pid"];
      flow.comm = f["local"]["comm"];
      flow.remote_addr = f["remote"]["addr"];
      flow.remote_port = f["remote"]["port"];
      flow.direction = f["direction"];
      flow.segs_out = f["total"]["segments_out"];
      flow.segs_in = f["total"]["segments_in"];
      flow.conntrack_events = f["conntrack_events"];
      latest[flow.proto + flow.local_addr + std::to_string(flow.local_port) + flow.remote_addr +
             std::to_string(flow.remote_port) + std::to_string(flow.pid)] = flow;
    }
  }
  std::vector<Flow> out;
  for (auto& [key, flow] : latest) out.push_back(flow);
  return out;
}

// How many scans nabla-sniffd has printed (one JSON line each).
size_t scans_printed(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  size_t n = 0;
  while (std::getline(in, line)) n += !line.empty() && line[0] == '{';
  return n;
}

// Waits until nabla-sniffd has printed at least `n` scans; false after 10 s.
bool wait_for_scans(const std::string& path, size_t n) {
  const auto deadline = Clock::now() + std::chrono::seconds(10);
  while (scans_printed(path) < n) {
    if (Clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

const Flow* find(const std::vector<Flow>& flows, const std::string& proto, int local_port,
                 int remote_port, int pid, const std::string& remote_addr = "127.0.0.1") {
  for (const auto& f : flows) {
    if (f.proto == proto && f.local_port == local_port && f.remote_port == remote_port &&
        f.pid == pid && f.remote_addr == remote_addr) {
      return &f;
    }
  }
  return nullptr;
}

TEST(SnifferTierChain, DiscoversTiersShortFlowsAndUdp) {
  NABLA_REQUIRE_ROOT_OR_SKIP();
  NetNamespace ns("chain");
  // Conntrack tracks a namespace only when a rule needs it.
  ns.run_checked({"iptables", "-w", "-A", "INPUT", "-m", "conntrack", "--ctstate",
                  "NEW,ESTABLISHED", "-j", "ACCEPT"});
  const std::string tier = NABLA_TIER_PATH;
  const std::string out_path =
      ::testing::TempDir() + "sniffd-chain-" + std::to_string(::getpid()) + ".jsonl";
  ChildProcess db(
      {tier, "--listen", "127.0.0.1:9003", "--workers", "2", "--url", "* service=fixed:100us"}, &ns,
      "/dev/null");
  ChildProcess app({tier, "--listen", "127.0.0.1:9002", "--workers", "2", "--tier",
                    "db=127.0.0.1:9003", "--url", "* call=db:serial:3"},
                   &ns, "/dev/null");
  ChildProcess web({tier, "--listen", "127.0.0.1:9001", "--workers", "2", "--tier",
                    "app=127.0.0.1:9002", "--url", "* call=app:serial:1"},
                   &ns, "/dev/null");
  // Downstream tiers first: web answers 502 when app is not listening yet,
  // which on a loaded machine takes longer than starting web. (Each probe
  // connection is closed at once, before nabla-sniffd starts.)
  nabla::testing::connect_in(ns, "127.0.0.1", kDb);
  nabla::testing::connect_in(ns, "127.0.0.1", kApp);
  FileDescriptor client = nabla::testing::connect_in(ns, "127.0.0.1", kWeb);
  ASSERT_TRUE(nabla::testing::http_get_ok(client));  // the whole chain is up

  // --count bounds it; the test stops it sooner, two scans after the last
  // datagram.
  ChildProcess sniffd(
      {NABLA_SNIFFD_PATH, "--print", "--json", "--interval", "100ms", "--count", "100"}, &ns,
      out_path);
  // Its first scan: subscribed to conntrack, and every tier's listener known
  // (an event before that would name no process).
  ASSERT_TRUE(wait_for_scans(out_path, 1)) << "nabla-sniffd printed no scan in 10 s";

  for (int i = 1; i < kRequests; ++i) ASSERT_TRUE(nabla::testing::http_get_ok(client));

  // A short flow to db from another source address: connect, one message, close.
  const auto t0 = Clock::now();
  {
    FileDescriptor shorty = nabla::testing::connect_in(ns, "127.0.0.1", kDb, "127.0.0.2");
    ASSERT_TRUE(nabla::testing::http_get_ok(shorty));
    // Lives 20 ms: far shorter than the 100 ms scan interval, long enough for
    // the sniffer to look the connecting socket up when the event arrives.
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_LT(Clock::now() - t0, std::chrono::milliseconds(50));

  // UDP: a bound receiver (owned by this test) and one datagram to it.
  FileDescriptor udp_rx = ns.socket(AF_INET, SOCK_DGRAM, 0);
  sockaddr_in rx = nabla::testing::ipv4_address("127.0.0.1", kUdp);
  ASSERT_EQ(::bind(udp_rx.get(), reinterpret_cast<sockaddr*>(&rx), sizeof rx), 0);
  // A whole scan after the bind lists the receiver.
  ASSERT_TRUE(wait_for_scans(out_path, scans_printed(out_path) + 2));
  FileDescriptor udp_tx = ns.socket(AF_INET, SOCK_DGRAM, 0);
  sockaddr_in tx = nabla::testing::ipv4_address("127.0.0.3", 0);
  ASSERT_EQ(::bind(udp_tx.get(), reinterpret_cast<sockaddr*>(&tx), sizeof tx), 0);
  ASSERT_EQ(::sendto(udp_tx.get(), "x", 1, 0, reinterpret_cast<sockaddr*>(&rx), sizeof rx), 1);

  // The datagram's event is read at the next scan.
  ASSERT_TRUE(wait_for_scans(out_path, scans_printed(out_path) + 2));
  sniffd.signal(SIGINT);
  ASSERT_EQ(sniffd.wait(std::chrono::seconds(5)), 0);
  const std::vector<Flow> flows = read_flows(out_path);
  ::unlink(out_path.c_str());
  ASSERT_FALSE(flows.empty());

  // Each tier's two ends, with its own pid and comm; client ports folded.
  const Flow* web_in = find(flows, "tcp", kWeb, 0, web.pid());
  const Flow* web_out = find(flows, "tcp", 0, kApp, web.pid());
  const Flow* app_in = find(flows, "tcp", kApp, 0, app.pid());
  const Flow* app_out = find(flows, "tcp", 0, kDb, app.pid());
  const Flow* db_in = find(flows, "tcp", kDb, 0, db.pid());
  const Flow* client_out = find(flows, "tcp", 0, kWeb, ::getpid());
  for (const Flow* f : {web_in, web_out, app_in, app_out, db_in, client_out}) {
    ASSERT_NE(f, nullptr) << "missing a flow; saw " << flows.size();
    EXPECT_EQ(f->local_addr, "127.0.0.1");
  }
  EXPECT_EQ(web_in->comm, "nabla-tier");
  EXPECT_EQ(db_in->comm, "nabla-tier");
  EXPECT_EQ(web_in->direction, "inbound");
  EXPECT_EQ(app_out->direction, "outbound");
  // Messages follow the patterns: one request per client request to app,
  // three to db (each request and each response is one small segment).
  EXPECT_GE(web_out->segs_out, kRequests - 1);
  EXPECT_LE(web_out->segs_out, kRequests);
  EXPECT_GE(app_out->segs_out, 3 * (kRequests - 1));
  EXPECT_LE(app_out->segs_out, 3 * kRequests);
  EXPECT_EQ(app_in->segs_in, web_out->segs_out);

  // The 50 ms connection, attributed to db through its listening port.
  const Flow* short_in = find(flows, "tcp", kDb, 0, db.pid(), "127.0.0.2");
  ASSERT_NE(short_in, nullptr);
  EXPECT_EQ(short_in->comm, "nabla-tier");
  EXPECT_GE(short_in->conntrack_events, 1u);

  // Its client end, attributed to this test (the connecting socket is looked
  // up when conntrack reports it), client port folded. (A connection that
  // closes within the sniffer's wake-up latency, ~1 ms, keeps pid 0 here.)
  const Flow* short_out = find(flows, "tcp", 0, kDb, ::getpid());
  ASSERT_NE(short_out, nullptr);
  EXPECT_EQ(short_out->local_addr, "127.0.0.2");

  // The UDP flow, attributed to this test's bound receiver.
  const Flow* udp_in = find(flows, "udp", kUdp, 0, ::getpid(), "127.0.0.3");
  ASSERT_NE(udp_in, nullptr);

  // Nothing else: the chain's five flows + the client's, the short flow's two
  // ends, the UDP flow's two ends (outbound ones may carry pid 0), and the
  // db readiness probe's two ends.
  EXPECT_LE(flows.size(), 12u);
}

}  // namespace
