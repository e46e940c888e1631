// sock_diag: parsing of constructed netlink messages, and live dumps of
// loopback sockets this test opens (no privileges needed).
#include "nabla/sniffer/sock_diag.hh"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <libmnl/libmnl.h>
#include <linux/inet_diag.h>
#include <linux/sock_diag.h>
#include <linux/tcp.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "nabla/common/fd.hh"
#include "nabla/sniffer/proc_map.hh"

namespace nabla::sniffer {
namespace {

using common::FileDescriptor;

// Builds one SOCK_DIAG_BY_FAMILY message like the kernel sends.
struct MessageBuilder {
  alignas(nlmsghdr) char buf[4096] = {};
  nlmsghdr* nlh;
  inet_diag_msg* msg;

  MessageBuilder() {
    nlh = mnl_nlmsg_put_header(buf);
    nlh->nlmsg_type = SOCK_DIAG_BY_FAMILY;
    msg = static_cast<inet_diag_msg*>(mnl_nlmsg_put_extra_header(nlh, sizeof(inet_diag_msg)));
    msg->idiag_family = AF_INET;
    msg->idiag_state = kTcpEstablished;
    msg->id.idiag_sport = htons(8080);
    msg->id.idiag_dport = htons(40000);
    msg->id.idiag_src[0] = htonl(0x0a000001);
    msg->id.idiag_dst[0] = htonl(0x0a000002);
    msg->id.idiag_cookie[0] = 7;
    msg->id.idiag_cookie[1] = 1;
    msg->idiag_inode = 123456;
    msg->idiag_uid = 1000;
  }
  void put_tcp_info(size_t len) {
    tcp_info info{};
    info.tcpi_segs_in = 11;
    info.tcpi_segs_out = 12;
    info.tcpi_data_segs_in = 5;
    info.tcpi_data_segs_out = 6;
    info.tcpi_bytes_acked = 4000;
    info.tcpi_bytes_received = 3000;
    mnl_attr_put(nlh, INET_DIAG_INFO, len, &info);
  }
};

TEST(ParseInetDiag, FullRecord) {
  MessageBuilder b;
  mnl_attr_put_u8(b.nlh, INET_DIAG_SHUTDOWN, 0);  // an attribute we do not use
  b.put_tcp_info(sizeof(tcp_info));
  mnl_attr_put_u32(b.nlh, 200, 1);  // unknown to this build: skipped
  SocketRecord rec;
  DumpCounters counters;
  ASSERT_EQ(parse_inet_diag(b.nlh, Proto::kTcp, rec, counters), ParseResult::kOk);
  EXPECT_EQ(rec.key.proto, Proto::kTcp);
  EXPECT_EQ(rec.key.local_port, 8080);
  EXPECT_EQ(rec.key.remote_port, 40000);
  char text[64];
  rec.key.local.format(text, sizeof text);
  EXPECT_STREQ(text, "10.0.0.1");
  rec.key.remote.format(text, sizeof text);
  EXPECT_STREQ(text, "10.0.0.2");
  EXPECT_EQ(rec.inode, 123456u);
  EXPECT_EQ(rec.uid, 1000u);
  EXPECT_EQ(rec.cookie, (uint64_t{1} << 32) | 7);
  ASSERT_TRUE(rec.has_tcp_info);
  EXPECT_EQ(rec.tcp.segs_in, 11u);
  EXPECT_EQ(rec.tcp.segs_out, 12u);
  EXPECT_EQ(rec.tcp.data_segs_in, 5u);
  EXPECT_EQ(rec.tcp.data_segs_out, 6u);
  EXPECT_EQ(rec.tcp.bytes_acked, 4000u);
  EXPECT_EQ(rec.tcp.bytes_received, 3000u);
  EXPECT_EQ(counters.messages, 1u);
  EXPECT_EQ(counters.malformed, 0u);
}

TEST(ParseInetDiag, OldKernelTcpInfoWithoutDataSegs) {
  MessageBuilder b;
  b.put_tcp_info(offsetof(tcp_info, tcpi_bytes_received) + 8);
  SocketRecord rec;
  DumpCounters counters;
  ASSERT_EQ(parse_inet_diag(b.nlh, Proto::kTcp, rec, counters), ParseResult::kOk);
  EXPECT_TRUE(rec.has_tcp_info);
  EXPECT_EQ(rec.tcp.bytes_received, 3000u);
  EXPECT_EQ(rec.tcp.data_segs_in, 0u);  // not in this tcp_info size
}

TEST(ParseInetDiag, ShortTcpInfoCounted) {
  MessageBuilder b;
  b.put_tcp_info(16);
  SocketRecord rec;
  DumpCounters counters;
  ASSERT_EQ(parse_inet_diag(b.nlh, Proto::kTcp, rec, counters), ParseResult::kOk);
  EXPECT_FALSE(rec.has_tcp_info);
  EXPECT_EQ(counters.short_tcp_info, 1u);
}

TEST(ParseInetDiag, MalformedRefused) {
  DumpCounters counters;
  SocketRecord rec;
  {
    MessageBuilder b;  // attribute length overruns the message
    b.put_tcp_info(sizeof(tcp_info));
    auto* attr = static_cast<nlattr*>(mnl_nlmsg_get_payload_offset(b.nlh, sizeof(inet_diag_msg)));
    attr->nla_len = static_cast<uint16_t>(attr->nla_len + 64);
    EXPECT_EQ(parse_inet_diag(b.nlh, Proto::kTcp, rec, counters), ParseResult::kMalformed);
  }
  {
    MessageBuilder b;  // truncated inet_diag_msg
    b.nlh->nlmsg_len = NLMSG_HDRLEN + 8;
    EXPECT_EQ(parse_inet_diag(b.nlh, Proto::kTcp, rec, counters), ParseResult::kMalformed);
  }
  {
    MessageBuilder b;  // unknown family
    b.msg->idiag_family = AF_UNIX;
    EXPECT_EQ(parse_inet_diag(b.nlh, Proto::kTcp, rec, counters), ParseResult::kMalformed);
  }
  EXPECT_EQ(counters.malformed, 3u);
  MessageBuilder other;
  other.nlh->nlmsg_type = NLMSG_NOOP;
  EXPECT_EQ(parse_inet_diag(other.nlh, Proto::kTcp, rec, counters), ParseResult::kSkipped);
}

uint16_t local_port(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len);
  return ntohs(ss.ss_family == AF_INET ? reinterpret_cast<sockaddr_in*>(&ss)->sin_port
                                       : reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port);
}

uint64_t inode_of(int fd) {
  struct stat st {};
  ::fstat(fd, &st);
  return st.st_ino;
}

std::string self_comm() {
  std::ifstream in("/proc/self/comm");
  std::string comm;
  std::getline(in, comm);
  return comm;
}

// A connected TCP pair on loopback with `out` bytes client→server and
// `back` bytes server→client already exchanged.
struct TcpPair {
  FileDescriptor client;
  FileDescriptor server;
  uint16_t server_port = 0;

  TcpPair(int family, size_t out, size_t back) {
    FileDescriptor listener = FileDescriptor::socket(family, SOCK_STREAM, 0);
    sockaddr_storage ss{};
    socklen_t len = 0;
    if (family == AF_INET) {
      auto* sa = reinterpret_cast<sockaddr_in*>(&ss);
      sa->sin_family = AF_INET;
      sa->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      len = sizeof *sa;
    } else {
      auto* sa = reinterpret_cast<sockaddr_in6*>(&ss);
      sa->sin6_family = AF_INET6;
      sa->sin6_addr = in6addr_loopback;
      len = sizeof *sa;
    }
    EXPECT_EQ(::bind(listener.get(), reinterpret_cast<sockaddr*>(&ss), len), 0);
    EXPECT_EQ(::listen(listener.get(), 1), 0);
    server_port = local_port(listener.get());
    if (family == AF_INET) {
      reinterpret_cast<sockaddr_in*>(&ss)->sin_port = htons(server_port);
    } else {
      reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port = htons(server_port);
    }
    client = FileDescriptor::socket(family, SOCK_STREAM, 0);
    EXPECT_EQ(::connect(client.get(), reinterpret_cast<sockaddr*>(&ss), len), 0);
    server = FileDescriptor(::accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC));
    exchange(out, back);
  }
  void exchange(size_t out, size_t back) {
    std::vector<char> buf(std::max(out, back), 'x');
    client.write_all(std::string_view(buf.data(), out));
    size_t got = 0;
    while (got < out) got += ::recv(server.get(), buf.data(), out - got, 0);
    server.write_all(std::string_view(buf.data(), back));
    got = 0;
    while (got < back) got += ::recv(client.get(), buf.data(), back - got, 0);
  }
};

const SocketRecord* find_local(const std::vector<SocketRecord>& recs, Proto proto, uint16_t lport,
                               uint16_t rport) {
  for (const auto& r : recs) {
    if (r.key.proto == proto && r.key.local_port == lport && r.key.remote_port == rport) return &r;
  }
  return nullptr;
}

TEST(SockDiag, FindsLoopbackTcpWithCountersAndPid) {
  for (int family : {AF_INET, AF_INET6}) {
    TcpPair pair(family, 3000, 500);
    SockDiag diag;
    std::vector<SocketRecord> recs;
    diag.dump_all(recs);
    const uint16_t cport = local_port(pair.client.get());
    const SocketRecord* client = find_local(recs, Proto::kTcp, cport, pair.server_port);
    const SocketRecord* server = find_local(recs, Proto::kTcp, pair.server_port, cport);
    ASSERT_NE(client, nullptr) << family;
    ASSERT_NE(server, nullptr) << family;
    EXPECT_EQ(client->key.local.family, family);
    EXPECT_EQ(client->state, kTcpEstablished);
    EXPECT_EQ(client->inode, inode_of(pair.client.get()));
    ASSERT_TRUE(client->has_tcp_info);
    EXPECT_EQ(client->tcp.bytes_acked, 3001u);  // RFC 4898 counts the SYN as one byte
    EXPECT_EQ(client->tcp.bytes_received, 500u);
    EXPECT_GE(client->tcp.data_segs_out, 1u);
    EXPECT_GE(client->tcp.data_segs_in, 1u);
    EXPECT_EQ(server->tcp.bytes_received, 3000u);
    // Listeners are left out unless asked for.
    EXPECT_EQ(find_local(recs, Proto::kTcp, pair.server_port, 0), nullptr);
    EXPECT_EQ(diag.counters().malformed, 0u);
    EXPECT_EQ(diag.counters().errors, 0u);

    ProcMap procs;
    EXPECT_GT(procs.scan(), 0u);
    const ProcessInfo* owner = procs.find(client->inode);
    ASSERT_NE(owner, nullptr);
    EXPECT_EQ(owner->pid, ::getpid());
    EXPECT_EQ(owner->comm, self_comm());
  }
}

TEST(SockDiag, CountersGrowBetweenDumps) {
  TcpPair pair(AF_INET, 100, 100);
  SockDiag diag;
  std::vector<SocketRecord> recs;
  diag.dump_all(recs);
  const uint16_t cport = local_port(pair.client.get());
  const SocketRecord before = *find_local(recs, Proto::kTcp, cport, pair.server_port);
  for (int i = 0; i < 10; ++i) pair.exchange(100, 100);
  diag.dump_all(recs);
  const SocketRecord* after = find_local(recs, Proto::kTcp, cport, pair.server_port);
  ASSERT_NE(after, nullptr);
  EXPECT_EQ(after->cookie, before.cookie);
  EXPECT_EQ(after->tcp.bytes_acked - before.tcp.bytes_acked, 1000u);
  EXPECT_EQ(after->tcp.data_segs_out - before.tcp.data_segs_out, 10u);
}

TEST(SockDiag, FindsConnectedUdp) {
  FileDescriptor a = FileDescriptor::socket(AF_INET, SOCK_DGRAM, 0);
  FileDescriptor b = FileDescriptor::socket(AF_INET, SOCK_DGRAM, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(b.get(), reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0);
  sa.sin_port = htons(local_port(b.get()));
  ASSERT_EQ(::connect(a.get(), reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0);
  SockDiag diag;
  std::vector<SocketRecord> recs;
  diag.dump_all(recs);
  const SocketRecord* rec = find_local(recs, Proto::kUdp, local_port(a.get()), local_port(b.get()));
  ASSERT_NE(rec, nullptr);
  EXPECT_FALSE(rec->has_tcp_info);
  EXPECT_EQ(rec->inode, inode_of(a.get()));
}

}  // namespace
}  // namespace nabla::sniffer

namespace nabla::sniffer {
namespace {

IpAddr loopback4() {
  IpAddr a;
  a.family = AF_INET;
  a.bytes[0] = 127;
  a.bytes[3] = 1;
  return a;
}

TEST(SockDiag, ExactLookupFindsOneSocket) {
  TcpPair pair(AF_INET, 10, 10);
  SockDiag diag;
  SocketRecord rec;
  const uint16_t cport = local_port(pair.client.get());
  ASSERT_TRUE(diag.lookup(Proto::kTcp, loopback4(), cport, loopback4(), pair.server_port, rec));
  EXPECT_EQ(rec.inode, inode_of(pair.client.get()));
  EXPECT_EQ(rec.key.local_port, cport);
  ASSERT_TRUE(diag.lookup(Proto::kTcp, loopback4(), pair.server_port, loopback4(), cport, rec));
  EXPECT_EQ(rec.inode, inode_of(pair.server.get()));
  // A tuple nobody has: not found, and the socket stays usable.
  EXPECT_FALSE(diag.lookup(Proto::kTcp, loopback4(), 1, loopback4(), 2, rec));
  EXPECT_TRUE(diag.lookup(Proto::kTcp, loopback4(), cport, loopback4(), pair.server_port, rec));
  EXPECT_EQ(diag.counters().errors, 0u);
}

TEST(ProcMap, RescanKnownFindsNewSocketsOfKnownProcesses) {
  TcpPair first(AF_INET, 1, 1);  // this process owns sockets at scan time
  ProcMap procs;
  procs.scan();
  ASSERT_NE(procs.find(inode_of(first.client.get())), nullptr);
  TcpPair later(AF_INET, 1, 1);
  EXPECT_EQ(procs.find(inode_of(later.client.get())), nullptr);
  EXPECT_GE(procs.rescan_known(), 2u);
  const ProcessInfo* owner = procs.find(inode_of(later.client.get()));
  ASSERT_NE(owner, nullptr);
  EXPECT_EQ(owner->pid, ::getpid());
}

}  // namespace
}  // namespace nabla::sniffer
