// ctnetlink event parsing on constructed messages (the live subscription is
// tested as root in tests/integration/sniffer_conntrack_test.cc).
#include "nabla/sniffer/conntrack.hh"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <libmnl/libmnl.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netfilter/nfnetlink_conntrack.h>
#include <netinet/in.h>

namespace nabla::sniffer {
namespace {

struct CtBuilder {
  alignas(nlmsghdr) char buf[4096] = {};
  nlmsghdr* nlh;

  explicit CtBuilder(int msg_type) {
    nlh = mnl_nlmsg_put_header(buf);
    nlh->nlmsg_type = static_cast<uint16_t>((NFNL_SUBSYS_CTNETLINK << 8) | msg_type);
    auto* nfg = static_cast<nfgenmsg*>(mnl_nlmsg_put_extra_header(nlh, sizeof(nfgenmsg)));
    nfg->nfgen_family = AF_INET;
  }
  // A well-formed IPv4 tuple (host byte order in, network order on the wire).
  void tuple(uint16_t which, uint32_t src, uint32_t dst, uint8_t proto, uint16_t sport,
             uint16_t dport) {
    raw_tuple(which, CTA_IP_V4_SRC, CTA_IP_V4_DST, htonl(src), htonl(dst), proto, htons(sport),
              htons(dport));
  }
  // The same nesting with the values as given: the address attributes' types
  // are the caller's (so an IPv6 type can carry 4 bytes), and the source port
  // is put as a u32 when `src_port_u32` (a port of the wrong size).
  void raw_tuple(uint16_t which, uint16_t src_attr, uint16_t dst_attr, uint32_t src, uint32_t dst,
                 uint8_t proto, uint16_t sport, uint16_t dport, bool src_port_u32 = false) {
    nlattr* t = mnl_attr_nest_start(nlh, which);
    nlattr* ip = mnl_attr_nest_start(nlh, CTA_TUPLE_IP);
    mnl_attr_put_u32(nlh, src_attr, src);
    mnl_attr_put_u32(nlh, dst_attr, dst);
    mnl_attr_nest_end(nlh, ip);
    nlattr* p = mnl_attr_nest_start(nlh, CTA_TUPLE_PROTO);
    mnl_attr_put_u8(nlh, CTA_PROTO_NUM, proto);
    if (src_port_u32) {
      mnl_attr_put_u32(nlh, CTA_PROTO_SRC_PORT, sport);
    } else {
      mnl_attr_put_u16(nlh, CTA_PROTO_SRC_PORT, sport);
    }
    mnl_attr_put_u16(nlh, CTA_PROTO_DST_PORT, dport);
    mnl_attr_nest_end(nlh, p);
    mnl_attr_nest_end(nlh, t);
  }
  void counters(uint16_t which, uint64_t packets, uint64_t bytes) {
    nlattr* c = mnl_attr_nest_start(nlh, which);
    mnl_attr_put_u64(nlh, CTA_COUNTERS_PACKETS, htobe64(packets));
    mnl_attr_put_u64(nlh, CTA_COUNTERS_BYTES, htobe64(bytes));
    mnl_attr_nest_end(nlh, c);
  }
};

TEST(ParseConntrack, NewTcp) {
  CtBuilder b(IPCTNL_MSG_CT_NEW);
  b.tuple(CTA_TUPLE_ORIG, 0x0a000001, 0x0a000002, IPPROTO_TCP, 45000, 8080);
  b.tuple(CTA_TUPLE_REPLY, 0x0a000002, 0x0a000001, IPPROTO_TCP, 8080, 45000);
  mnl_attr_put_u32(b.nlh, CTA_MARK, 0);
  ConntrackEvent ev;
  ASSERT_EQ(parse_conntrack_event(b.nlh, ev), ConntrackParse::kOk);
  EXPECT_EQ(ev.type, ConntrackEventType::kNew);
  EXPECT_EQ(ev.proto, Proto::kTcp);
  char text[64];
  ev.src.format(text, sizeof text);
  EXPECT_STREQ(text, "10.0.0.1");
  ev.dst.format(text, sizeof text);
  EXPECT_STREQ(text, "10.0.0.2");
  EXPECT_EQ(ev.src_port, 45000);
  EXPECT_EQ(ev.dst_port, 8080);
  EXPECT_FALSE(ev.has_counters);
}

TEST(ParseConntrack, DestroyUdpWithCounters) {
  CtBuilder b(IPCTNL_MSG_CT_DELETE);
  b.tuple(CTA_TUPLE_ORIG, 0x0a000001, 0x0a000003, IPPROTO_UDP, 40000, 53);
  b.counters(CTA_COUNTERS_ORIG, 2, 120);
  b.counters(CTA_COUNTERS_REPLY, 1, 300);
  ConntrackEvent ev;
  ASSERT_EQ(parse_conntrack_event(b.nlh, ev), ConntrackParse::kOk);
  EXPECT_EQ(ev.type, ConntrackEventType::kDestroy);
  EXPECT_EQ(ev.proto, Proto::kUdp);
  ASSERT_TRUE(ev.has_counters);
  EXPECT_EQ(ev.orig_packets, 2u);
  EXPECT_EQ(ev.orig_bytes, 120u);
  EXPECT_EQ(ev.reply_packets, 1u);
  EXPECT_EQ(ev.reply_bytes, 300u);
}

TEST(ParseConntrack, IgnoredAndMalformed) {
  ConntrackEvent ev;
  {
    CtBuilder b(IPCTNL_MSG_CT_NEW);  // ICMP: not a link
    b.tuple(CTA_TUPLE_ORIG, 1, 2, IPPROTO_ICMP, 0, 0);
    EXPECT_EQ(parse_conntrack_event(b.nlh, ev), ConntrackParse::kIgnored);
  }
  {
    CtBuilder b(IPCTNL_MSG_CT_GET);
    EXPECT_EQ(parse_conntrack_event(b.nlh, ev), ConntrackParse::kIgnored);
  }
  {
    CtBuilder b(IPCTNL_MSG_CT_NEW);  // no tuple at all
    EXPECT_EQ(parse_conntrack_event(b.nlh, ev), ConntrackParse::kMalformed);
  }
  {
    CtBuilder b(IPCTNL_MSG_CT_NEW);  // a port attribute of the wrong size
    b.raw_tuple(CTA_TUPLE_ORIG, CTA_IP_V4_SRC, CTA_IP_V4_DST, 1, 2, IPPROTO_TCP, 1, 2,
                /*src_port_u32=*/true);
    EXPECT_EQ(parse_conntrack_event(b.nlh, ev), ConntrackParse::kMalformed);
  }
  {
    CtBuilder b(IPCTNL_MSG_CT_NEW);  // an IPv6 address of 4 bytes
    b.raw_tuple(CTA_TUPLE_ORIG, CTA_IP_V6_SRC, CTA_IP_V6_DST, 1, 2, IPPROTO_TCP, 1, 2);
    EXPECT_EQ(parse_conntrack_event(b.nlh, ev), ConntrackParse::kMalformed);
  }
}

}  // namespace
}  // namespace nabla::sniffer
