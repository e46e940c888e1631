// The injector's reading of what the queue socket receives, on hand-built
// datagrams laid out as the kernel sends queued packets: the fields of a
// packet, the rules that make a message malformed, the ids that never
// arrived, the kernel's stamp, and the answer to a configuration message.
#include <arpa/inet.h>
#include <endian.h>
#include <gtest/gtest.h>
#include <libmnl/libmnl.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netfilter/nfnetlink_queue.h>

#include <cerrno>
#include <cstring>
#include <optional>
#include <span>
#include <vector>

#include "nabla/injector/nfqueue.hh"
#include "netlink_buffer.hh"

namespace nabla::injector {
namespace {

constexpr uint16_t kQueue = 3;

// One datagram of the queue socket.
struct Datagram : nabla::testing::NetlinkBuffer {
  // A packet message's headers; the attributes follow.
  void packet_start(uint16_t queue = kQueue) {
    start((NFNL_SUBSYS_QUEUE << 8) | NFQNL_MSG_PACKET, 0);
    auto* nfg = static_cast<nfgenmsg*>(mnl_nlmsg_put_extra_header(nlh, sizeof(nfgenmsg)));
    nfg->nfgen_family = AF_INET;
    nfg->version = NFNETLINK_V0;
    nfg->res_id = htons(queue);
  }
  void packet_header(uint32_t id) {
    nfqnl_msg_packet_hdr h{};
    h.packet_id = htonl(id);
    h.hw_protocol = htons(0x0800);
    mnl_attr_put(nlh, NFQA_PACKET_HDR, sizeof h, &h);
  }
  // A whole packet: header, a payload of `len` bytes, the length on the wire.
  void packet(uint32_t id, size_t len = 20, uint32_t cap_len = 0) {
    packet_start();
    packet_header(id);
    std::vector<uint8_t> payload(len, 0x45);
    mnl_attr_put(nlh, NFQA_PAYLOAD, payload.size(), payload.data());
    if (cap_len != 0) mnl_attr_put_u32(nlh, NFQA_CAP_LEN, htonl(cap_len));
  }
  void stamp(int64_t real_ns) {
    nfqnl_msg_packet_timestamp ts{};
    ts.sec = htobe64(static_cast<uint64_t>(real_ns / 1'000'000'000));
    ts.usec = htobe64(static_cast<uint64_t>(real_ns % 1'000'000'000 / 1000));
    mnl_attr_put(nlh, NFQA_TIMESTAMP, sizeof ts, &ts);
  }
  void error(int error, uint32_t seq) { error_message(error, seq); }
};

struct Read {
  QueueMessageReader reader{kQueue};
  NfQueueCounters counters;
  std::vector<QueuedPacket> packets;
  ReceiveClocks clocks{5'000'000'000, 1'700'000'000'000'000'000};

  size_t operator()(std::span<const std::byte> datagram) {
    return reader.read(
        datagram, clocks, [&](const QueuedPacket& p) { packets.push_back(p); }, counters);
  }
};

// Reads `datagram` afresh and checks how many packets it gave and how many
// messages were malformed.
void expect_read(std::span<const std::byte> datagram, size_t packets, uint64_t malformed) {
  Read read;
  EXPECT_EQ(read(datagram), packets);
  EXPECT_EQ(read.counters.malformed, malformed);
  EXPECT_EQ(read.counters.received, packets);
}

TEST(QueueMessages, APacketGivesItsIdPayloadLengthsAndFlags) {
  Datagram d;
  d.packet(41, 20, 1500);
  mnl_attr_put_u32(d.nlh, NFQA_SKB_INFO, htonl(NFQA_SKB_CSUMNOTREADY | NFQA_SKB_GSO));
  Read read;
  ASSERT_EQ(read(d.bytes()), 1u);
  const QueuedPacket& p = read.packets[0];
  EXPECT_EQ(p.id, 41u);
  EXPECT_EQ(p.hw_protocol, 0x0800);
  EXPECT_EQ(p.payload.size(), 20u);
  EXPECT_EQ(p.payload[0], 0x45);
  EXPECT_EQ(p.original_length, 1500u);
  EXPECT_TRUE(p.checksum_not_ready);
  EXPECT_TRUE(p.gso);
  EXPECT_EQ(p.received_ns, read.clocks.mono_ns);
  EXPECT_EQ(p.queued_ns, 0);
  EXPECT_EQ(read.counters.received, 1u);
  EXPECT_EQ(read.counters.malformed, 0u);
}

TEST(QueueMessages, WithoutCapLenTheLengthIsThePayloads) {
  Datagram d;
  d.packet(1, 33);
  Read read;
  ASSERT_EQ(read(d.bytes()), 1u);
  EXPECT_EQ(read.packets[0].original_length, 33u);
  EXPECT_FALSE(read.packets[0].gso);
}

TEST(QueueMessages, PacketsComeInOrderAndMissingIdsAreCounted) {
  Datagram d;
  d.packet(5);
  d.packet(8);
  Read read;
  ASSERT_EQ(read(d.bytes()), 2u);
  EXPECT_EQ(read.packets[0].id, 5u);
  EXPECT_EQ(read.packets[1].id, 8u);
  EXPECT_EQ(read.counters.id_gaps, 2u);
}

TEST(QueueMessages, MissingIdsAreCountedAcrossDatagramsAndTheWrap) {
  Read read;
  Datagram first;
  first.packet(0xfffffffe);
  Datagram second;
  second.packet(1);
  read(first.bytes());
  read(second.bytes());
  EXPECT_EQ(read.counters.id_gaps, 2u);  // 0xffffffff and 0
}

TEST(QueueMessages, AHeaderOfTheWrongSizeMakesTheMessageMalformed) {
  Datagram d;
  d.packet_start();
  const uint32_t short_header = htonl(9);
  mnl_attr_put(d.nlh, NFQA_PACKET_HDR, sizeof short_header, &short_header);
  d.packet(10);
  Read read;
  ASSERT_EQ(read(d.bytes()), 1u);
  EXPECT_EQ(read.packets[0].id, 10u);
  EXPECT_EQ(read.counters.malformed, 1u);
}

TEST(QueueMessages, AStampOrLengthOfTheWrongSizeMakesTheMessageMalformed) {
  Datagram d;
  d.packet(1);
  const uint16_t two = 2;
  mnl_attr_put(d.nlh, NFQA_CAP_LEN, sizeof two, &two);
  d.packet(2);
  const uint64_t eight = 8;
  mnl_attr_put(d.nlh, NFQA_TIMESTAMP, sizeof eight, &eight);
  expect_read(d.bytes(), 0, 2);
}

TEST(QueueMessages, AMessageWithoutPacketHeaderIsMalformed) {
  Datagram d;
  d.packet_start();
  const uint8_t byte = 0x45;
  mnl_attr_put(d.nlh, NFQA_PAYLOAD, 1, &byte);
  expect_read(d.bytes(), 0, 1);
}

TEST(QueueMessages, AnotherQueuesPacketIsNotTaken) {
  Datagram d;
  d.packet_start(kQueue + 1);
  d.packet_header(4);
  expect_read(d.bytes(), 0, 1);
}

TEST(QueueMessages, AnAttributeReachingPastItsMessageIsNotRead) {
  Datagram d;
  d.packet(6, 16);
  // The payload attribute claims 8 bytes more than its message holds.
  auto* payload = reinterpret_cast<nlattr*>(reinterpret_cast<std::byte*>(d.nlh) + NLMSG_HDRLEN +
                                            NLMSG_ALIGN(sizeof(nfgenmsg)) +
                                            NLA_ALIGN(NLA_HDRLEN + sizeof(nfqnl_msg_packet_hdr)));
  ASSERT_EQ(payload->nla_type, NFQA_PAYLOAD);
  payload->nla_len = static_cast<uint16_t>(payload->nla_len + 8);
  expect_read(d.bytes(), 0, 1);
}

TEST(QueueMessages, AMessageCutOffAtTheEndIsCountedAndNotRead) {
  Datagram d;
  d.packet(1);
  d.packet(2);
  const std::span<const std::byte> whole = d.bytes();
  Read read;
  EXPECT_EQ(read(whole.first(whole.size() - 4)), 1u);
  EXPECT_EQ(read.packets[0].id, 1u);
  EXPECT_EQ(read.counters.malformed, 1u);
}

TEST(QueueMessages, AnErrorTheKernelSentBackIsCountedNotTaken) {
  Datagram d;
  d.error(-ENOENT, 0);
  d.packet(3);
  expect_read(d.bytes(), 1, 1);
}

TEST(QueueMessages, TheDelayCountsFromTheEndOfTheKernelsStampedMicrosecond) {
  Read read;
  Datagram d;
  d.packet(1);
  const int64_t age_ns = 250'000;  // queued a quarter ms before the receive
  d.stamp(read.clocks.real_ns - age_ns);
  ASSERT_EQ(read(d.bytes()), 1u);
  const int64_t queued = read.packets[0].queued_ns;
  // µs resolution, the end of the µs taken: never before the true time.
  EXPECT_GE(queued, read.clocks.mono_ns - age_ns);
  EXPECT_LT(queued, read.clocks.mono_ns - age_ns + 1000);
  EXPECT_EQ(read.counters.kernel_stamped, 1u);
}

TEST(QueueMessages, AStampFromTheFutureIsNotUsed) {
  Read read;
  Datagram d;
  d.packet(1);
  d.stamp(read.clocks.real_ns + 5'000'000);
  ASSERT_EQ(read(d.bytes()), 1u);
  EXPECT_EQ(read.packets[0].queued_ns, 0);
  EXPECT_EQ(read.counters.kernel_stamped, 0u);
}

TEST(QueueAcknowledgement, TheKernelsErrnoForTheRequestsSequence) {
  Datagram busy;
  busy.error(-EBUSY, 7);
  EXPECT_EQ(acknowledgement_error(busy.bytes(), 7), EBUSY);
  Datagram ack;
  ack.error(0, 7);
  EXPECT_EQ(acknowledgement_error(ack.bytes(), 7), 0);
}

TEST(QueueAcknowledgement, TheAnswerMayComeAfterQueuedPackets) {
  Datagram d;
  d.packet(1);
  d.error(-EPERM, 7);
  EXPECT_EQ(acknowledgement_error(d.bytes(), 7), EPERM);
}

TEST(QueueAcknowledgement, AnotherRequestsAnswerOrNoneIsNoAnswer) {
  Datagram other;
  other.error(0, 8);
  other.packet(2);
  EXPECT_EQ(acknowledgement_error(other.bytes(), 7), std::nullopt);
  EXPECT_EQ(acknowledgement_error({}, 7), std::nullopt);
}

}  // namespace
}  // namespace nabla::injector
