// The queue socket's datagrams, read by the project's netlink reader; see
// QueueMessageReader in nfqueue.hh.
#include <arpa/inet.h>
#include <endian.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netfilter/nfnetlink_queue.h>

#include <algorithm>
#include <array>
#include <cstring>

#include "nabla/common/netlink_reader.hh"
#include "nabla/injector/nfqueue.hh"

namespace nabla::injector {

namespace netlink = common::netlink;

namespace {

constexpr uint16_t kPacketMessageType = (NFNL_SUBSYS_QUEUE << 8) | NFQNL_MSG_PACKET;

// The exact payload size of each attribute read; 0 for those passed over
// (NFQA_PAYLOAD is read at any length).
size_t required_size(uint16_t type) {
  switch (type) {
    case NFQA_PACKET_HDR:
      return sizeof(nfqnl_msg_packet_hdr);
    case NFQA_TIMESTAMP:
      return sizeof(nfqnl_msg_packet_timestamp);
    case NFQA_CAP_LEN:
    case NFQA_SKB_INFO:
      return sizeof(uint32_t);
    default:
      return 0;
  }
}

using AttrTable = std::array<const nlattr*, NFQA_MAX + 1>;

// The message's attributes by type; false when one of those read has the
// wrong size or the attributes do not tile the payload.
bool table_of(const nlmsghdr* nlh, AttrTable& table) {
  netlink::AttrWalk walk = netlink::message_attrs(nlh, sizeof(nfgenmsg));
  while (const nlattr* attr = walk.next()) {
    const uint16_t type = netlink::attr_type(attr);
    if (type > NFQA_MAX) continue;
    const size_t size = required_size(type);
    if (size != 0 && netlink::payload_len(attr) != size) return false;
    table[type] = attr;
  }
  return walk.leftover() == 0;
}

// This queue's packet message: the type, and a family header that fits
// and names this queue.
bool is_packet_of(const nlmsghdr* nlh, uint16_t queue_num) {
  if (nlh->nlmsg_type != kPacketMessageType) return false;
  if (nlh->nlmsg_len < NLMSG_LENGTH(sizeof(nfgenmsg))) return false;
  nfgenmsg family{};
  std::memcpy(&family, netlink::message_payload(nlh), sizeof family);
  return family.version == NFNETLINK_V0 && ntohs(family.res_id) == queue_num;
}

uint32_t u32_of(const nlattr* attr) {
  return ntohl(netlink::attr_get<uint32_t>(attr));
}

// The kernel's stamp as a monotonic time (0: none, or implausible).
int64_t stamp_of(const nlattr* attr, ReceiveClocks clocks) {
  const auto ts = netlink::attr_get<nfqnl_msg_packet_timestamp>(attr);
  const auto sec = static_cast<int64_t>(be64toh(ts.sec));
  const auto usec = static_cast<int64_t>(be64toh(ts.usec));
  if (sec < 0 || sec >= 4'000'000'000 || usec < 0 || usec >= 1'000'000) return 0;
  return queued_mono_ns(sec * 1'000'000'000 + usec * 1000, clocks.mono_ns, clocks.real_ns);
}

}  // namespace

bool QueueMessageReader::read_packet(const nlmsghdr* nlh, ReceiveClocks clocks,
                                     QueuedPacket& packet, NfQueueCounters& counters) const {
  AttrTable table{};
  if (!is_packet_of(nlh, queue_num_) || !table_of(nlh, table)) return false;
  if (table[NFQA_PACKET_HDR] == nullptr) return false;
  const auto header = netlink::attr_get<nfqnl_msg_packet_hdr>(table[NFQA_PACKET_HDR]);
  packet.id = ntohl(header.packet_id);
  packet.hw_protocol = ntohs(header.hw_protocol);
  packet.received_ns = clocks.mono_ns;
  if (table[NFQA_TIMESTAMP] != nullptr) {
    packet.queued_ns = stamp_of(table[NFQA_TIMESTAMP], clocks);
    if (packet.queued_ns != 0) ++counters.kernel_stamped;
  }
  if (const nlattr* data = table[NFQA_PAYLOAD]) {
    packet.payload = {static_cast<const uint8_t*>(netlink::payload(data)),
                      netlink::payload_len(data)};
  }
  packet.original_length = table[NFQA_CAP_LEN] != nullptr
                               ? u32_of(table[NFQA_CAP_LEN])
                               : static_cast<uint32_t>(packet.payload.size());
  if (table[NFQA_SKB_INFO] != nullptr) {
    const uint32_t info = u32_of(table[NFQA_SKB_INFO]);
    packet.checksum_not_ready = (info & NFQA_SKB_CSUMNOTREADY) != 0;
    packet.gso = (info & NFQA_SKB_GSO) != 0;
  }
  return true;
}

// Ids are consecutive per queue; a jump means the kernel assigned ids to
// packets whose message never reached us (with fail-open they passed
// undelayed; this is how ENOBUFS shows up under NETLINK_NO_ENOBUFS).
void QueueMessageReader::note_id(uint32_t id, NfQueueCounters& counters) {
  if (last_id_ != 0) counters.id_gaps += packet_ids_skipped(last_id_, id);
  if (last_id_ == 0 || packet_id_before(last_id_, id)) last_id_ = id;
}

size_t QueueMessageReader::read(std::span<const std::byte> datagram, ReceiveClocks clocks,
                                const std::function<void(const QueuedPacket&)>& on_packet,
                                NfQueueCounters& counters) {
  netlink::MessageWalk walk(datagram);
  size_t handed = 0;
  size_t walked = 0;
  while (const nlmsghdr* nlh = walk.next()) {
    walked = std::min<size_t>(walked + NLMSG_ALIGN(nlh->nlmsg_len), datagram.size());
    QueuedPacket packet;
    if (!read_packet(nlh, clocks, packet, counters)) {
      ++counters.malformed;
      continue;
    }
    note_id(packet.id, counters);
    ++counters.received;
    ++handed;
    on_packet(packet);
  }
  if (walked < datagram.size()) ++counters.malformed;  // bytes that are no whole message
  return handed;
}

}  // namespace nabla::injector
