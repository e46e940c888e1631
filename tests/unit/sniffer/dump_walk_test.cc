// The walks of one received buffer of dump replies (sock_diag, ctnetlink,
// RTM_GETADDR) on hand-built buffers of several messages: the daemon's
// receive loops call these same functions on what recv returned.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <libmnl/libmnl.h>
#include <linux/if_addr.h>
#include <linux/inet_diag.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netfilter/nfnetlink_conntrack.h>
#include <linux/rtnetlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>

#include <cerrno>
#include <cstring>
#include <span>
#include <vector>

#include "nabla/sniffer/conntrack.hh"
#include "nabla/sniffer/interface_addresses.hh"
#include "nabla/sniffer/sock_diag.hh"
#include "netlink_buffer.hh"

namespace nabla::sniffer {
namespace {

constexpr uint32_t kSeq = 7;

// One received buffer of a dump's replies, sequence number kSeq unless told.
struct Received : nabla::testing::NetlinkBuffer {
  nlmsghdr* start(uint16_t type, uint32_t seq = kSeq) { return NetlinkBuffer::start(type, seq); }
  void diag_record(uint16_t sport, uint8_t state = kTcpEstablished, uint32_t seq = kSeq) {
    start(SOCK_DIAG_BY_FAMILY, seq);
    auto* msg = static_cast<inet_diag_msg*>(mnl_nlmsg_put_extra_header(nlh, sizeof(inet_diag_msg)));
    msg->idiag_family = AF_INET;
    msg->idiag_state = state;
    msg->id.idiag_sport = htons(sport);
    msg->id.idiag_dport = htons(40000);
  }
  void ct_entry(uint8_t proto, uint16_t sport, uint32_t seq = kSeq) {
    start((NFNL_SUBSYS_CTNETLINK << 8) | IPCTNL_MSG_CT_NEW, seq);
    auto* nfg = static_cast<nfgenmsg*>(mnl_nlmsg_put_extra_header(nlh, sizeof(nfgenmsg)));
    nfg->nfgen_family = AF_INET;
    nlattr* tuple = mnl_attr_nest_start(nlh, CTA_TUPLE_ORIG);
    nlattr* ip = mnl_attr_nest_start(nlh, CTA_TUPLE_IP);
    mnl_attr_put_u32(nlh, CTA_IP_V4_SRC, htonl(0x0a000001));
    mnl_attr_put_u32(nlh, CTA_IP_V4_DST, htonl(0x0a000002));
    mnl_attr_nest_end(nlh, ip);
    nlattr* p = mnl_attr_nest_start(nlh, CTA_TUPLE_PROTO);
    mnl_attr_put_u8(nlh, CTA_PROTO_NUM, proto);
    mnl_attr_put_u16(nlh, CTA_PROTO_SRC_PORT, htons(sport));
    mnl_attr_put_u16(nlh, CTA_PROTO_DST_PORT, htons(53));
    mnl_attr_nest_end(nlh, p);
    mnl_attr_nest_end(nlh, tuple);
  }
  void address(uint32_t v4, uint32_t seq = kSeq) {
    start(RTM_NEWADDR, seq);
    auto* ifa = static_cast<ifaddrmsg*>(mnl_nlmsg_put_extra_header(nlh, sizeof(ifaddrmsg)));
    ifa->ifa_family = AF_INET;
    mnl_attr_put_u32(nlh, IFA_LOCAL, htonl(v4));
  }
  void done(uint32_t seq = kSeq) {
    start(NLMSG_DONE, seq);
    *static_cast<int*>(mnl_nlmsg_put_extra_header(nlh, sizeof(int))) = 0;
  }
  void error(int error, uint32_t seq = kSeq) { error_message(error, seq); }
};

struct DiagWalk {
  std::vector<SocketRecord> out;
  DumpCounters counters;
  DumpStep walk(std::span<const std::byte> bytes, bool include_listeners = false) {
    DiagReplies replies{Proto::kTcp, include_listeners, &out, &counters};
    return walk_diag_replies(bytes, kSeq, replies);
  }
};

TEST(SockDiagWalk, TwoRecordsThenDone) {
  Received r;
  r.diag_record(1001);
  r.diag_record(1002);
  r.done();
  DiagWalk w;
  EXPECT_EQ(w.walk(r.bytes()), DumpStep::kDone);
  ASSERT_EQ(w.out.size(), 2u);
  EXPECT_EQ(w.out[0].key.local_port, 1001);
  EXPECT_EQ(w.out[1].key.local_port, 1002);
  EXPECT_EQ(w.counters.messages, 2u);
}

TEST(SockDiagWalk, RecordsWithoutDoneAskForTheNextBuffer) {
  Received r;
  r.diag_record(1001);
  r.diag_record(1002, kTcpListen);  // a listener the dump leaves out
  DiagWalk w;
  EXPECT_EQ(w.walk(r.bytes()), DumpStep::kMore);
  EXPECT_EQ(w.out.size(), 1u);
  EXPECT_EQ(w.walk(r.bytes(), true), DumpStep::kMore);
  EXPECT_EQ(w.out.size(), 3u);
}

TEST(SockDiagWalk, RecordThenErrorFailsKeepingTheRecord) {
  Received r;
  r.diag_record(1001);
  r.error(-ENOENT);
  r.diag_record(1002);  // after the error: not read
  DiagWalk w;
  EXPECT_EQ(w.walk(r.bytes()), DumpStep::kFailed);
  ASSERT_EQ(w.out.size(), 1u);
  EXPECT_EQ(w.out[0].key.local_port, 1001);

  Received ack;  // an acknowledgement ends the exchange
  ack.error(0);
  EXPECT_EQ(DiagWalk().walk(ack.bytes()), DumpStep::kDone);
}

TEST(SockDiagWalk, WrongSequenceNumberOrInterruptedDumpFails) {
  Received r;
  r.diag_record(1001, kTcpEstablished, kSeq + 1);
  r.done();
  DiagWalk w;
  EXPECT_EQ(w.walk(r.bytes()), DumpStep::kFailed);
  EXPECT_TRUE(w.out.empty());

  Received zero;  // sequence number 0 matches any
  zero.diag_record(1001, kTcpEstablished, 0);
  EXPECT_EQ(w.walk(zero.bytes()), DumpStep::kMore);
  EXPECT_EQ(w.out.size(), 1u);

  Received intr;
  intr.diag_record(1001);
  intr.nlh->nlmsg_flags |= NLM_F_DUMP_INTR;
  EXPECT_EQ(DiagWalk().walk(intr.bytes()), DumpStep::kFailed);
}

TEST(SockDiagWalk, TruncatedLastMessageIsNotRead) {
  Received r;
  r.diag_record(1001);
  r.diag_record(1002);
  const std::span<const std::byte> all = r.bytes();
  DiagWalk w;
  EXPECT_EQ(w.walk(all.first(all.size() - 1)), DumpStep::kMore);
  ASSERT_EQ(w.out.size(), 1u);
  EXPECT_EQ(w.out[0].key.local_port, 1001);

  Received short_error;  // an NLMSG_ERROR too short for its errno fails too
  short_error.error(0);
  short_error.nlh->nlmsg_len = NLMSG_HDRLEN + 2;
  EXPECT_EQ(DiagWalk().walk(short_error.bytes()), DumpStep::kFailed);
}

TEST(ConntrackWalk, TwoEntriesThenDone) {
  Received r;
  r.ct_entry(IPPROTO_TCP, 1001);
  r.ct_entry(IPPROTO_UDP, 1002);
  r.done();
  std::vector<ConntrackEvent> out;
  int error = 0;
  EXPECT_EQ(walk_conntrack_dump(r.bytes(), kSeq, false, out, error), DumpStep::kDone);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].proto, Proto::kTcp);
  EXPECT_EQ(out[1].src_port, 1002);
  out.clear();
  EXPECT_EQ(walk_conntrack_dump(r.bytes(), kSeq, true, out, error), DumpStep::kDone);
  ASSERT_EQ(out.size(), 1u);  // UDP only
  EXPECT_EQ(out[0].proto, Proto::kUdp);
  EXPECT_EQ(error, 0);
}

TEST(ConntrackWalk, EntryThenErrorFailsWithTheErrno) {
  Received r;
  r.ct_entry(IPPROTO_TCP, 1001);
  r.error(-EPERM);
  std::vector<ConntrackEvent> out;
  int error = 0;
  EXPECT_EQ(walk_conntrack_dump(r.bytes(), kSeq, false, out, error), DumpStep::kFailed);
  EXPECT_EQ(error, EPERM);
  EXPECT_EQ(out.size(), 1u);
}

TEST(ConntrackWalk, LateRepliesAndAcksAreSkipped) {
  Received r;
  r.ct_entry(IPPROTO_TCP, 1001, kSeq - 1);  // a late reply to the request before
  r.done(kSeq - 1);
  r.error(0);  // an acknowledgement
  r.ct_entry(IPPROTO_TCP, 1002);
  std::vector<ConntrackEvent> out;
  int error = 0;
  EXPECT_EQ(walk_conntrack_dump(r.bytes(), kSeq, false, out, error), DumpStep::kMore);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].src_port, 1002);
}

TEST(ConntrackWalk, TruncatedLastMessageIsNotRead) {
  Received r;
  r.ct_entry(IPPROTO_TCP, 1001);
  r.ct_entry(IPPROTO_TCP, 1002);
  const std::span<const std::byte> all = r.bytes();
  std::vector<ConntrackEvent> out;
  int error = 0;
  EXPECT_EQ(walk_conntrack_dump(all.first(all.size() - 4), kSeq, false, out, error),
            DumpStep::kMore);
  EXPECT_EQ(out.size(), 1u);

  Received short_error;
  short_error.error(-EPERM);
  short_error.nlh->nlmsg_len = NLMSG_HDRLEN;
  EXPECT_EQ(walk_conntrack_dump(short_error.bytes(), kSeq, false, out, error), DumpStep::kFailed);
  EXPECT_EQ(error, EBADMSG);
}

TEST(AddressWalk, TwoAddressesThenDone) {
  Received r;
  r.address(0x0a000001);
  r.address(0x7f000001);
  r.done();
  std::vector<IpAddr> found;
  int error = 0;
  EXPECT_EQ(walk_address_dump(r.bytes(), kSeq, found, error), DumpStep::kDone);
  ASSERT_EQ(found.size(), 2u);
  char text[64];
  found[1].format(text, sizeof text);
  EXPECT_STREQ(text, "127.0.0.1");
}

}  // namespace
}  // namespace nabla::sniffer
