// Closed sockets and their owners, from recorded inputs (no root): destroy
// notifications folded into the flow table (no double counting with scans,
// TIME_WAIT leftovers ignored), listener attribution (prefork workers,
// wildcard listeners), cgroup files, destroy-message parsing and the
// conntrack chain's name.
#include "nabla/sniffer/attribution.hh"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <libmnl/libmnl.h>
#include <linux/inet_diag.h>
#include <linux/sock_diag.h>
#include <linux/tcp.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "addresses.hh"
#include "nabla/sniffer/conntrack_rule.hh"
#include "nabla/sniffer/flow_table.hh"
#include "nabla/sniffer/sock_diag.hh"

namespace nabla::sniffer {
namespace {

namespace fs = std::filesystem;

using testing::kRange;
using testing::v4;

// An accepted connection on 10.0.0.1:8080 from 10.0.0.2:<ephemeral>, with
// payload counters as the kernel reports them (bytes_sent, no SYN byte).
SocketRecord accepted(uint64_t cookie, uint32_t segs_out, uint32_t segs_in, uint64_t sent,
                      uint64_t received) {
  SocketRecord s;
  s.key.proto = Proto::kTcp;
  s.key.local = v4(10, 0, 0, 1);
  s.key.local_port = 8080;
  s.key.remote = v4(10, 0, 0, 2);
  s.key.remote_port = static_cast<uint16_t>(40000 + cookie);
  s.state = kTcpEstablished;
  s.cookie = cookie;
  s.has_tcp_info = true;
  s.tcp.data_segs_out = segs_out;
  s.tcp.data_segs_in = segs_in;
  s.tcp.has_bytes_sent = true;
  s.tcp.bytes_sent = sent;
  s.tcp.bytes_acked = sent;  // a passive opener's bytes_acked has no SYN byte
  s.tcp.bytes_received = received;
  return s;
}

// As a destroy notification carries it: no inode, state CLOSE.
SocketRecord destroyed(SocketRecord s) {
  s.inode = 0;
  s.state = 7;
  return s;
}

Owner owner(int32_t pid, const std::string& comm, const std::string& cgroup = {}) {
  Owner o;
  o.process.pid = pid;
  o.process.comm = comm;
  o.process.cgroup = cgroup;
  return o;
}

std::vector<FlowRecord> reported(const FlowTable& table, uint64_t min_messages = 1) {
  uint64_t next = 0;
  return table.since(0, min_messages, next);
}

TEST(ClosedSockets, ShortConnectionCountedAndAttributedToTheListener) {
  FlowTable table(kRange);
  Attribution owners;
  owners.add_listener(Proto::kTcp, v4(10, 0, 0, 1), 8080, owner(42, "nginx", "/web.slice"));
  // A connection that opened and closed between two scans: 1 request in,
  // 1 response out; the notification is all the sniffer ever sees of it.
  table.closed(5, destroyed(accepted(9, 1, 1, 300, 80)), owners);
  const auto flows = reported(table);
  ASSERT_EQ(flows.size(), 1u);
  const FlowRecord& f = flows[0];
  EXPECT_EQ(f.id.pid, 42);
  EXPECT_EQ(f.comm, "nginx");
  EXPECT_EQ(f.cgroup, "/web.slice");
  EXPECT_EQ(f.owner_source, OwnerSource::kListener);
  EXPECT_EQ(f.id.local_port, 8080);
  EXPECT_EQ(f.id.remote_port, 0);  // ephemeral port folded
  EXPECT_EQ(f.direction, Direction::kInbound);
  EXPECT_EQ(f.total.data_segs_out, 1u);
  EXPECT_EQ(f.total.data_segs_in, 1u);
  EXPECT_EQ(f.total.bytes_out, 300u);
  EXPECT_EQ(f.total.bytes_in, 80u);
  EXPECT_EQ(f.closed_sockets, 1u);
  EXPECT_EQ(f.last_seen_ns, 5);
}

TEST(ClosedSockets, SeenByAScanThenClosedCountsOnlyTheRest) {
  FlowTable table(kRange);
  Attribution owners;
  owners.add_socket(9, FlowId{}, owner(43, "app"));
  SocketRecord live = accepted(9, 2, 2, 200, 100);
  table.update(10, std::vector<SocketRecord>{live}, owners);
  table.closed(15, destroyed(accepted(9, 5, 4, 500, 180)), owners);
  // Its TIME_WAIT leftover (same cookie, no counters, no owner) in the next
  // scans neither adds nor creates anything.
  SocketRecord time_wait = destroyed(accepted(9, 0, 0, 0, 0));
  time_wait.state = kTcpTimeWait;
  time_wait.has_tcp_info = false;
  table.update(20, std::vector<SocketRecord>{time_wait}, Attribution{});
  table.update(30, std::vector<SocketRecord>{time_wait}, Attribution{});
  const auto flows = reported(table, 0);
  ASSERT_EQ(flows.size(), 1u);
  EXPECT_EQ(flows[0].id.pid, 43);
  EXPECT_EQ(flows[0].owner_source, OwnerSource::kSocket);
  EXPECT_EQ(flows[0].total.data_segs_out, 5u);
  EXPECT_EQ(flows[0].total.data_segs_in, 4u);
  EXPECT_EQ(flows[0].total.bytes_out, 500u);
  EXPECT_EQ(flows[0].total.bytes_in, 180u);
  // A second notification for the same socket adds nothing.
  table.closed(35, destroyed(accepted(9, 5, 4, 500, 180)), owners);
  EXPECT_EQ(reported(table)[0].total.bytes_out, 500u);
}

TEST(ClosedSockets, NotificationReadAfterTheScanThatMissedTheSocket) {
  FlowTable table(kRange);
  Attribution owners;
  owners.add_socket(9, FlowId{}, owner(43, "app"));
  table.update(10, std::vector<SocketRecord>{accepted(9, 2, 2, 200, 100)}, owners);
  // The socket is freed just before the next scan; its notification is read
  // after that scan: the baseline must still be there (no double count).
  table.update(20, std::vector<SocketRecord>{}, owners);
  table.closed(21, destroyed(accepted(9, 3, 3, 300, 150)), owners);
  const auto flows = reported(table);
  ASSERT_EQ(flows.size(), 1u);
  EXPECT_EQ(flows[0].total.data_segs_out, 3u);
  EXPECT_EQ(flows[0].total.bytes_out, 300u);
  EXPECT_EQ(flows[0].total.bytes_in, 150u);
}

TEST(ClosedSockets, UnknownOwnerAndZeroDataConnections) {
  FlowTable table(kRange);
  // No listener, no socket, no tuple: pid 0, still counted.
  SocketRecord out = destroyed(accepted(3, 4, 4, 400, 800));
  out.key.local_port = 45000;
  out.key.remote_port = 443;
  table.closed(1, out, Attribution{});
  // A connect-and-close without data is no message: only min_messages 0.
  table.closed(2, destroyed(accepted(4, 0, 0, 0, 0)), Attribution{});
  const auto flows = reported(table);
  ASSERT_EQ(flows.size(), 1u);
  EXPECT_EQ(flows[0].id.pid, 0);
  EXPECT_EQ(flows[0].owner_source, OwnerSource::kNone);
  EXPECT_EQ(flows[0].direction, Direction::kOutbound);
  EXPECT_EQ(flows[0].total.bytes_out, 400u);
  EXPECT_EQ(reported(table, 0).size(), 2u);
}

TEST(ClosedSockets, PayloadBytesPreferredOverBytesAcked) {
  FlowTable table(kRange);
  SocketRecord s = destroyed(accepted(5, 3, 1, 0, 10));
  // An active opener: bytes_acked counts SYN and FIN; bytes_sent less the
  // retransmitted bytes is the payload, once.
  s.key.local_port = 45000;
  s.key.remote_port = 80;
  s.tcp.bytes_acked = 302;
  s.tcp.bytes_sent = 400;
  s.tcp.bytes_retrans = 100;
  table.closed(1, s, Attribution{});
  EXPECT_EQ(reported(table)[0].total.bytes_out, 300u);
}

TEST(ClosedSockets, GuessedMasterGivesWayToTheWorkerSeenOwningTheSocket) {
  FlowTable table(kRange);
  Attribution guess;
  guess.add_listener(Proto::kTcp, v4(10, 0, 0, 1), 8080, owner(100, "nginx"));  // the master
  table.closed(1, destroyed(accepted(1, 1, 1, 10, 10)), guess);
  // A scan sees the worker holding an accepted connection of the same link.
  Attribution seen;
  seen.add_socket(2, FlowId{}, owner(101, "nginx"));
  table.update(2, std::vector<SocketRecord>{accepted(2, 2, 2, 20, 20)}, seen);
  auto flows = reported(table);
  ASSERT_EQ(flows.size(), 1u);  // one link end, not master and worker
  EXPECT_EQ(flows[0].id.pid, 101);
  EXPECT_EQ(flows[0].total.data_segs_in, 3u);
  // A later guess of the master stays with the worker's flow; another
  // program's guess does not.
  table.closed(3, destroyed(accepted(3, 1, 1, 10, 10)), guess);
  flows = reported(table);
  ASSERT_EQ(flows.size(), 1u);
  EXPECT_EQ(flows[0].total.data_segs_in, 4u);
  Attribution other;
  other.add_listener(Proto::kTcp, v4(10, 0, 0, 1), 8080, owner(200, "haproxy"));
  table.closed(4, destroyed(accepted(4, 1, 1, 10, 10)), other);
  EXPECT_EQ(reported(table).size(), 2u);
}

TEST(Attribution, WildcardAndDualStackListeners) {
  Attribution owners;
  IpAddr any6;
  any6.family = AF_INET6;
  owners.add_listener(Proto::kTcp, IpAddr{AF_INET, {}}, 80, owner(1, "v4any"));
  owners.add_listener(Proto::kTcp, any6, 443, owner(2, "dual"));
  owners.add_listener(Proto::kUdp, v4(10, 0, 0, 1), 53, owner(3, "dns"));
  ASSERT_NE(owners.listener(Proto::kTcp, v4(10, 0, 0, 1), 80), nullptr);
  EXPECT_EQ(owners.listener(Proto::kTcp, v4(10, 0, 0, 1), 80)->process.comm, "v4any");
  ASSERT_NE(owners.listener(Proto::kTcp, v4(10, 0, 0, 1), 443), nullptr);
  EXPECT_EQ(owners.listener(Proto::kTcp, v4(10, 0, 0, 1), 443)->process.comm, "dual");
  EXPECT_EQ(owners.listener(Proto::kUdp, v4(10, 0, 0, 1), 53)->process.comm, "dns");
  EXPECT_EQ(owners.listener(Proto::kTcp, v4(10, 0, 0, 1), 53), nullptr);  // other protocol
  EXPECT_EQ(owners.listener(Proto::kUdp, v4(10, 0, 0, 9), 53), nullptr);  // other address
}

// A /proc tree with a prefork server: master 100 and worker 101 share the
// listening socket 1000; the worker holds accepted socket 1001.
class FakeProc {
 public:
  FakeProc() : root_(fs::path(::testing::TempDir()) / ("proc-" + std::to_string(::getpid()))) {
    add(100, "nginx", {1000});
    add(101, "nginx", {1000, 1001});
  }
  ~FakeProc() { fs::remove_all(root_); }
  void add(int pid, const std::string& comm, const std::vector<uint64_t>& inodes) {
    const fs::path dir = root_ / std::to_string(pid);
    fs::create_directories(dir / "fd");
    std::ofstream(dir / "comm") << comm << "\n";
    std::ofstream(dir / "cgroup") << "0::/system.slice/nginx.service\n";
    int fd = 3;
    for (uint64_t inode : inodes) {
      fs::create_symlink("socket:[" + std::to_string(inode) + "]",
                         dir / "fd" / std::to_string(fd++));
    }
  }
  void remove(int pid) { fs::remove_all(root_ / std::to_string(pid)); }
  std::string root() const { return root_.string(); }

 private:
  fs::path root_;
};

TEST(Attribution, PreforkWorkerInheritsAcceptedConnections) {
  FakeProc proc;
  ProcMap procs(proc.root());
  procs.scan();
  SocketRecord listening;
  listening.key.proto = Proto::kTcp;
  listening.key.local = v4(10, 0, 0, 1);
  listening.key.local_port = 8080;
  listening.state = kTcpListen;
  listening.inode = 1000;
  listening.cookie = 1;
  SocketRecord live = accepted(2, 1, 1, 10, 10);
  live.inode = 1001;
  Attribution owners;
  owners.rebuild(std::vector<SocketRecord>{listening, live}, procs, kRange);
  const Owner* o = owners.listener(Proto::kTcp, v4(10, 0, 0, 1), 8080);
  ASSERT_NE(o, nullptr);
  EXPECT_EQ(o->process.pid, 101);  // the worker, not the master (lowest pid)
  EXPECT_EQ(o->process.cgroup, "/system.slice/nginx.service");

  // Next scan: no accepted connection alive; the worker is still the one.
  procs.scan();
  owners.rebuild(std::vector<SocketRecord>{listening}, procs, kRange);
  ASSERT_NE(owners.listener(Proto::kTcp, v4(10, 0, 0, 1), 8080), nullptr);
  EXPECT_EQ(owners.listener(Proto::kTcp, v4(10, 0, 0, 1), 8080)->process.pid, 101);
  // A socket the previous scan saw still resolves to its owner by cookie.
  FlowTable table(kRange);
  table.closed(1, destroyed(accepted(2, 3, 3, 30, 30)), owners);
  EXPECT_EQ(reported(table)[0].owner_source, OwnerSource::kSocket);

  // The worker exits: the listening socket's owner (the master) again.
  proc.remove(101);
  procs.scan();
  owners.rebuild(std::vector<SocketRecord>{listening}, procs, kRange);
  ASSERT_NE(owners.listener(Proto::kTcp, v4(10, 0, 0, 1), 8080), nullptr);
  EXPECT_EQ(owners.listener(Proto::kTcp, v4(10, 0, 0, 1), 8080)->process.pid, 100);
}

TEST(CgroupFile, V2LineElseFirstPath) {
  EXPECT_EQ(parse_cgroup_file("0::/system.slice/nginx.service\n"), "/system.slice/nginx.service");
  EXPECT_EQ(parse_cgroup_file("12:pids:/docker/abc\n1:name=systemd:/x\n0::/docker/abc\n"),
            "/docker/abc");
  EXPECT_EQ(parse_cgroup_file("12:pids:/docker/a:b\n"), "/docker/a:b");
  EXPECT_EQ(parse_cgroup_file(""), "");
  EXPECT_EQ(parse_cgroup_file("garbage"), "");
}

// A destroy notification as the kernel sends it: INET_DIAG_PROTOCOL and
// INET_DIAG_INFO, no inode.
struct DestroyMessage {
  alignas(nlmsghdr) char buf[4096] = {};
  nlmsghdr* nlh;
  explicit DestroyMessage(int protocol) {
    nlh = mnl_nlmsg_put_header(buf);
    nlh->nlmsg_type = SOCK_DIAG_BY_FAMILY;
    auto* msg = static_cast<inet_diag_msg*>(mnl_nlmsg_put_extra_header(nlh, sizeof(inet_diag_msg)));
    msg->idiag_family = AF_INET;
    msg->idiag_state = 7;
    msg->id.idiag_sport = htons(8080);
    msg->id.idiag_dport = htons(40001);
    msg->id.idiag_src[0] = htonl(0x0a000001);
    msg->id.idiag_dst[0] = htonl(0x0a000002);
    msg->id.idiag_cookie[0] = 9;
    if (protocol >= 0) mnl_attr_put_u8(nlh, INET_DIAG_PROTOCOL, static_cast<uint8_t>(protocol));
  }
};

TEST(ParseDestroyedSocket, ProtocolFromTheAttribute) {
  DestroyMessage tcp(IPPROTO_TCP);
  tcp_info info{};
  info.tcpi_data_segs_out = 2;
  info.tcpi_bytes_sent = 120;
  info.tcpi_bytes_retrans = 20;
  info.tcpi_bytes_received = 80;
  mnl_attr_put(tcp.nlh, INET_DIAG_INFO, sizeof info, &info);
  SocketRecord rec;
  DumpCounters counters;
  ASSERT_EQ(parse_destroyed_socket(tcp.nlh, rec, counters), ParseResult::kOk);
  EXPECT_EQ(rec.key.proto, Proto::kTcp);
  EXPECT_EQ(rec.cookie, 9u);
  EXPECT_EQ(rec.key.local_port, 8080);
  ASSERT_TRUE(rec.has_tcp_info);
  ASSERT_TRUE(rec.tcp.has_bytes_sent);
  EXPECT_EQ(rec.tcp.bytes_sent, 120u);
  EXPECT_EQ(rec.tcp.bytes_retrans, 20u);
  EXPECT_EQ(rec.tcp.data_segs_out, 2u);

  DestroyMessage udp(IPPROTO_UDP);
  ASSERT_EQ(parse_destroyed_socket(udp.nlh, rec, counters), ParseResult::kOk);
  EXPECT_EQ(rec.key.proto, Proto::kUdp);
  EXPECT_FALSE(rec.has_tcp_info);

  DestroyMessage sctp(IPPROTO_SCTP);
  EXPECT_EQ(parse_destroyed_socket(sctp.nlh, rec, counters), ParseResult::kSkipped);
  DestroyMessage none(-1);
  EXPECT_EQ(parse_destroyed_socket(none.nlh, rec, counters), ParseResult::kSkipped);
  EXPECT_EQ(counters.malformed, 0u);
}

TEST(ConntrackRule, ChainNameCarriesTheCreatorPid) {
  EXPECT_EQ(conntrack_chain_name(1234), "nabla-sniffd-1234");
  EXPECT_EQ(conntrack_chain_creator("nabla-sniffd-1234"), 1234);
  EXPECT_FALSE(conntrack_chain_creator("NABLA-OUT").has_value());
  EXPECT_FALSE(conntrack_chain_creator("nabla-sniffd-").has_value());
  EXPECT_FALSE(conntrack_chain_creator("nabla-sniffd-12x").has_value());
  EXPECT_FALSE(conntrack_chain_creator("nabla-sniffd-0").has_value());
}

}  // namespace
}  // namespace nabla::sniffer
