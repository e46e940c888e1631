#include "nabla/sniffer/flow_table.hh"

#include <gtest/gtest.h>
#include <sys/socket.h>

#include <vector>

#include "addresses.hh"

namespace nabla::sniffer {
namespace {

using testing::kRange;
using testing::v4;

SocketRecord tcp(uint64_t cookie, uint16_t lport, uint16_t rport, uint32_t segs_out,
                 uint32_t segs_in, uint64_t acked, uint64_t received) {
  SocketRecord s;
  s.key.proto = Proto::kTcp;
  s.key.local = v4(10, 0, 0, 1);
  s.key.remote = v4(10, 0, 0, 2);
  s.key.local_port = lport;
  s.key.remote_port = rport;
  s.state = kTcpEstablished;
  s.cookie = cookie;
  s.inode = cookie;
  s.has_tcp_info = true;
  s.tcp.data_segs_out = segs_out;
  s.tcp.data_segs_in = segs_in;
  s.tcp.bytes_acked = acked;
  s.tcp.bytes_received = received;
  return s;
}

TEST(FlowTable, DeltasPerInterval) {
  FlowTable table(kRange);
  std::vector<SocketRecord> scan = {tcp(1, 40000, 8080, 3, 3, 301, 900)};
  EXPECT_EQ(table.update(1000, scan, nullptr), 1u);
  uint64_t cursor = 0;
  auto flows = table.since(0, 1, cursor);
  ASSERT_EQ(flows.size(), 1u);
  const FlowRecord& f = flows[0];
  EXPECT_EQ(f.id.local_port, 0);  // ephemeral folded
  EXPECT_EQ(f.id.remote_port, 8080);
  EXPECT_EQ(f.direction, Direction::kOutbound);
  EXPECT_EQ(f.last_interval.data_segs_out, 3u);
  EXPECT_EQ(f.last_interval.bytes_out, 300u);  // SYN byte removed
  EXPECT_EQ(f.last_interval.bytes_in, 900u);
  EXPECT_EQ(f.first_seen_ns, 1000);

  scan = {tcp(1, 40000, 8080, 5, 4, 501, 1000)};
  EXPECT_EQ(table.update(2000, scan, nullptr), 1u);
  flows = table.since(cursor, 1, cursor);
  ASSERT_EQ(flows.size(), 1u);
  EXPECT_EQ(flows[0].last_interval.data_segs_out, 2u);
  EXPECT_EQ(flows[0].last_interval.data_segs_in, 1u);
  EXPECT_EQ(flows[0].last_interval.bytes_out, 200u);
  EXPECT_EQ(flows[0].last_interval.bytes_in, 100u);
  EXPECT_EQ(flows[0].total.data_segs_out, 5u);
  EXPECT_EQ(flows[0].total.bytes_out, 500u);
  EXPECT_EQ(flows[0].last_seen_ns, 2000);

  // No traffic: nothing new since the cursor.
  EXPECT_EQ(table.update(3000, scan, nullptr), 0u);
  EXPECT_TRUE(table.since(cursor, 1, cursor).empty());
}

TEST(FlowTable, SocketsOfOneLinkAggregateAndEphemeralPortsFold) {
  FlowTable table(kRange);
  // Two client connections to the same service from different ephemeral
  // ports are one flow; a connection to another service port is another.
  std::vector<SocketRecord> scan = {tcp(1, 40000, 8080, 2, 2, 11, 10),
                                    tcp(2, 40001, 8080, 3, 3, 21, 20),
                                    tcp(3, 40002, 9090, 1, 1, 6, 5)};
  EXPECT_EQ(table.update(1, scan, nullptr), 2u);
  EXPECT_EQ(table.size(), 2u);
  uint64_t cursor = 0;
  for (const auto& f : table.since(0, 1, cursor)) {
    if (f.id.remote_port == 8080) {
      EXPECT_EQ(f.sockets, 2u);
      EXPECT_EQ(f.last_interval.data_segs_out, 5u);
      EXPECT_EQ(f.last_interval.bytes_out, 30u);
    } else {
      EXPECT_EQ(f.id.remote_port, 9090);
      EXPECT_EQ(f.sockets, 1u);
    }
  }
}

TEST(FlowTable, VanishedSocketForgottenAndNewCookieCountsFromZero) {
  FlowTable table(kRange);
  std::vector<SocketRecord> scan = {tcp(1, 40000, 8080, 10, 10, 101, 100)};
  table.update(1, scan, nullptr);
  // Socket 1 closed, socket 7 (same link, new connection) appeared.
  scan = {tcp(7, 40005, 8080, 1, 1, 11, 10)};
  table.update(2, scan, nullptr);
  uint64_t cursor = 0;
  const auto flows = table.since(0, 1, cursor);
  ASSERT_EQ(flows.size(), 1u);
  EXPECT_EQ(flows[0].last_interval.data_segs_out, 1u);
  EXPECT_EQ(flows[0].total.data_segs_out, 11u);
  EXPECT_EQ(flows[0].total.bytes_out, 110u);
}

TEST(FlowTable, ThresholdListenersAndInbound) {
  FlowTable table(kRange);
  SocketRecord listener = tcp(9, 8080, 0, 0, 0, 0, 0);
  listener.state = kTcpListen;
  SocketRecord server = tcp(3, 8080, 50000, 1, 1, 2, 1);  // inbound, 2 messages
  std::vector<SocketRecord> scan = {listener, server};
  table.update(1, scan, nullptr);
  uint64_t cursor = 0;
  auto flows = table.since(0, 2, cursor);
  ASSERT_EQ(flows.size(), 1u);
  EXPECT_EQ(flows[0].direction, Direction::kInbound);
  EXPECT_EQ(flows[0].id.local_port, 8080);
  EXPECT_EQ(flows[0].id.remote_port, 0);
  EXPECT_TRUE(table.since(0, 3, cursor).empty());  // below the threshold
}

TEST(FlowTable, MappedAddressesNormaliseAndExpire) {
  IpAddr mapped;
  mapped.family = AF_INET6;
  mapped.bytes[10] = 0xff;
  mapped.bytes[11] = 0xff;
  mapped.bytes[12] = 10;
  mapped.bytes[15] = 2;
  EXPECT_EQ(normalise(mapped), v4(10, 0, 0, 2));
  IpAddr loop6;
  loop6.family = AF_INET6;
  loop6.bytes[15] = 1;
  EXPECT_EQ(normalise(loop6), loop6);

  FlowTable table(kRange);
  std::vector<SocketRecord> scan = {tcp(1, 40000, 8080, 1, 1, 2, 1)};
  table.update(1'000, scan, nullptr);
  table.expire(5'000, 10'000);
  EXPECT_EQ(table.size(), 1u);
  table.expire(20'000, 10'000);
  EXPECT_EQ(table.size(), 0u);
}

TEST(FlowTable, NoteCreatesConntrackFlows) {
  FlowTable table(kRange);
  FlowId id;
  id.proto = Proto::kUdp;
  id.local = v4(10, 0, 0, 1);
  id.remote = v4(10, 0, 0, 2);
  id.remote_port = 53;
  table.note(5, id, Direction::kOutbound, FlowCounts{1, 1, 40, 80}, "dig");
  uint64_t cursor = 0;
  const auto flows = table.since(0, 1, cursor);
  ASSERT_EQ(flows.size(), 1u);
  EXPECT_EQ(flows[0].comm, "dig");
  EXPECT_EQ(flows[0].conntrack_events, 1u);
  EXPECT_EQ(flows[0].total.bytes_in, 80u);
  EXPECT_EQ(cursor, table.seq());
}

}  // namespace
}  // namespace nabla::sniffer

namespace nabla::sniffer {
namespace {

TEST(FlowTable, ThresholdRulesForFlowsWithoutCounts) {
  FlowTable table(PortRange{32768, 60999});
  SocketRecord tw;  // a TIME_WAIT leftover: no inode, no tcp_info
  tw.key.proto = Proto::kTcp;
  tw.key.local.family = AF_INET;
  tw.key.remote.family = AF_INET;
  tw.key.local_port = 40000;
  tw.key.remote_port = 8080;
  tw.state = 6;
  tw.cookie = 99;
  SocketRecord udp = tw;
  udp.key.proto = Proto::kUdp;
  udp.key.remote_port = 53;
  udp.cookie = 100;
  std::vector<SocketRecord> scan = {tw, udp};
  table.update(1, scan, nullptr);
  uint64_t cursor = 0;
  auto flows = table.since(0, 1, cursor);
  ASSERT_EQ(flows.size(), 1u);  // the UDP flow; the TCP one has no message
  EXPECT_EQ(flows[0].id.proto, Proto::kUdp);
  EXPECT_EQ(table.since(0, 0, cursor).size(), 2u);
  EXPECT_TRUE(table.since(0, 2, cursor).empty());
  // A conntrack-noted TCP flow that sock_diag also counted obeys the counts.
  FlowId id = table.flow_id(tw, 0);
  table.note(2, id, Direction::kOutbound, FlowCounts{}, "");
  EXPECT_EQ(table.since(0, 1, cursor).size(), 2u);
  SocketRecord live = tw;
  live.cookie = 101;
  live.has_tcp_info = true;
  live.tcp.data_segs_out = 4;
  live.tcp.data_segs_in = 4;
  scan = {live};
  table.update(3, scan, nullptr);
  bool found = false;
  for (const auto& f : table.since(0, 8, cursor)) found = found || f.id == id;
  EXPECT_TRUE(found);
  for (const auto& f : table.since(0, 9, cursor)) EXPECT_FALSE(f.id == id);
}

}  // namespace
}  // namespace nabla::sniffer

namespace nabla::sniffer {
namespace {

// A flood of new tuples stops at the cap: the flows there go on counting,
// the new ones are counted as refused, and expiry makes room again.
TEST(FlowTable, NewFlowsBeyondTheCapAreCountedNotRecorded) {
  FlowTable table(testing::kRange);
  table.set_max_flows(3);
  const auto udp_to = [](uint16_t port) {
    FlowId id;
    id.proto = Proto::kUdp;
    id.local = testing::v4(10, 0, 0, 1);
    id.remote = testing::v4(10, 0, 0, 2);
    id.remote_port = port;
    return id;
  };
  for (uint16_t port = 1; port <= 5; ++port) {
    table.note(5, udp_to(port), Direction::kOutbound, FlowCounts{1, 1, 40, 80}, "dig");
  }
  EXPECT_EQ(table.size(), 3u);
  EXPECT_EQ(table.flows_refused(), 2u);
  table.note(6, udp_to(1), Direction::kOutbound, FlowCounts{1, 1, 40, 80}, "dig");
  EXPECT_EQ(table.flows_refused(), 2u);  // a known flow is never refused
  uint64_t cursor = 0;
  const auto flows = table.since(0, 1, cursor);
  ASSERT_EQ(flows.size(), 3u);
  for (const FlowRecord& f : flows) {
    EXPECT_LE(f.id.remote_port, 3) << "a refused flow was listed";
    EXPECT_EQ(f.total.bytes_in, f.id.remote_port == 1 ? 160u : 80u);
  }
  table.expire(1'000'000'000'000, 1);  // all idle: gone
  table.note(1'000'000'000'001, udp_to(5), Direction::kOutbound, FlowCounts{1, 1, 40, 80}, "dig");
  EXPECT_EQ(table.size(), 1u);
  EXPECT_EQ(table.flows_refused(), 2u);
  EXPECT_EQ(FlowTable(testing::kRange).max_flows(), kDefaultMaxFlows);
}

}  // namespace
}  // namespace nabla::sniffer
