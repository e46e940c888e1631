#pragma once
// One NFQUEUE binding: bound on construction, unbound by the destructor.
// libmnl and libnetfilter_queue's nfq_nlmsg_* API build the messages we send
// (after libnetfilter_queue's examples/nf-queue.c); every byte the kernel
// sends back is read by QueueMessageReader below, with the project's own
// netlink reader (nabla/common/netlink_reader.hh), so the fuzzers see it.
// The socket is non-blocking and lives in the network namespace of the
// thread that creates it.
//
// Setup (throws std::system_error naming the step): bind the queue number,
// copy mode packet with the copy range (128 bytes unless a fault needs the
// payload), flags FAIL_OPEN | GSO, queue max length, NETLINK_NO_ENOBUFS and a
// large receive buffer. Config messages ask for an ACK so that a queue number
// already taken by another process fails here (EBUSY), not silently.
//
// Data path (never throws): receive() hands each queued packet to a callback
// and counts trouble; verdicts are appended to a send buffer and go out in
// one sendto per flush(). A batch verdict accepts every queued id up to the
// given id: only use it when all of them are being released now.
#include <linux/netlink.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <vector>

#include "nabla/common/fd.hh"

struct mnl_socket;

namespace nabla::injector {

// NFQUEUE packet ids count up per queue and wrap at 2^32. The kernel orders
// them as serial numbers (a batch verdict covers every id "not after" its
// own), and so does everything here: a is before b when b - a, modulo 2^32,
// is below 2^31.
constexpr bool packet_id_before(uint32_t a, uint32_t b) noexcept {
  return static_cast<int32_t>(a - b) < 0;
}
// Ids the kernel assigned between `last` and `next` whose messages never
// arrived (0 when next follows last, or is not after it).
constexpr uint32_t packet_ids_skipped(uint32_t last, uint32_t next) noexcept {
  const auto step = static_cast<int32_t>(next - last);
  return step > 1 ? static_cast<uint32_t>(step - 1) : 0;
}

struct NfQueueConfig {
  uint16_t queue_num = 0;
  uint32_t copy_range = 128;      // bytes of each packet copied to us
  uint32_t queue_maxlen = 65536;  // packets the kernel holds for us
  int receive_buffer_bytes = 8 << 20;
  bool fail_open = true;  // queue full: pass the packet, do not drop
  // Ask the kernel to stamp received packets (a global switch) so queued
  // packets that entered the host carry NFQA_TIMESTAMP. Packets sent by
  // local sockets (OUTPUT) are never stamped this way (only TCP's pacing
  // stamps reach them), so an OUTPUT-only queue turns this off and spares
  // every packet on the host a clock read.
  bool kernel_stamps = true;
};

struct QueuedPacket {
  uint32_t id = 0;
  uint16_t hw_protocol = 0;          // ETH_P_IP / ETH_P_IPV6 (host order)
  uint32_t original_length = 0;      // NFQA_CAP_LEN, or the payload length
  std::span<const uint8_t> payload;  // at most copy_range bytes, from the IP header
  bool checksum_not_ready = false;   // NFQA_SKB_CSUMNOTREADY
  bool gso = false;                  // NFQA_SKB_GSO
  // CLOCK_MONOTONIC right after the recvmmsg that returned this packet: never
  // before the packet reached the socket, so a delay counted from it never
  // releases early (a stamp taken before the receive call would be earlier
  // than a packet that arrived while the loop was busy).
  int64_t received_ns = 0;
  // CLOCK_MONOTONIC when the packet entered the stack or the queue, from the
  // kernel's NFQA_TIMESTAMP (µs resolution), or 0 when the kernel sent none
  // or an implausible one (see queued_mono_ns). The delay is counted from
  // here when set, so a loop that wakes late for an arrival still releases
  // it on time: the wait between the kernel and us is part of the delay,
  // not added to it.
  int64_t queued_ns = 0;
};

// The monotonic time of a kernel stamp (NFQA_TIMESTAMP, sec + usec, so
// truncated to the µs: the end of that µs is used, never early).
// skb->tstamp is CLOCK_REALTIME for a received packet and CLOCK_MONOTONIC
// for a TCP/EDT-paced one; the stamp is taken as whichever clock puts it
// within `max_age_ns` before the receive (received_mono_ns and
// received_real_ns read together right after the receive call). Returns 0
// for anything else: a future stamp (a clock step), a stale one, or none.
int64_t queued_mono_ns(int64_t stamp_ns, int64_t received_mono_ns, int64_t received_real_ns,
                       int64_t max_age_ns = 1'000'000'000);

struct NfQueueCounters {
  uint64_t received = 0;
  uint64_t enobufs = 0;  // receive overruns reported by the socket
  uint64_t id_gaps = 0;  // ids the kernel assigned but never delivered
  // Messages that are no queued packet of this queue: an attribute of the
  // wrong length, no packet header, another queue's or family's message,
  // bytes that are no whole message, a truncated datagram, or an error the
  // kernel sent back for a verdict.
  uint64_t malformed = 0;
  uint64_t verdicts_sent = 0;  // individual verdict messages
  uint64_t batch_verdicts_sent = 0;
  uint64_t send_errors = 0;
  uint64_t receive_calls = 0;   // recv syscalls (profiling: syscalls per packet)
  uint64_t kernel_stamped = 0;  // packets whose delay counts from the kernel's stamp
  uint64_t sends = 0;           // sendto syscalls carrying verdicts
  // Time inside those sendtos: the kernel re-injects the accepted packets
  // within the call (for a veth, up to the receiving socket), so this is
  // what a verdict costs the loop, and part of every reported actual delay.
  uint64_t send_ns = 0;
};

// The clocks read right after the receive call that returned a datagram
// (CLOCK_MONOTONIC and CLOCK_REALTIME; real_ns 0 when the queue asked for no
// kernel stamps, so that no stamp is matched).
struct ReceiveClocks {
  int64_t mono_ns = 0;
  int64_t real_ns = 0;
};

// Reads the datagrams of one queue's socket as the kernel sends them: whole
// netlink messages (common::netlink::MessageWalk), each an NFQNL_MSG_PACKET
// of this queue (nfgenmsg version 0, res_id the queue number) whose
// attributes tile its payload. The attributes read must have their exact
// size (NFQA_PACKET_HDR 8 bytes, NFQA_TIMESTAMP 16, NFQA_CAP_LEN and
// NFQA_SKB_INFO 4); others are passed over. A message that breaks any rule
// is counted malformed and yields no packet. Keeps the last packet id
// between datagrams to count the ids that never arrived. Pure: no system
// call, so the fuzzers drive it with any bytes.
class QueueMessageReader {
 public:
  explicit QueueMessageReader(uint16_t queue_num) : queue_num_(queue_num) {}
  // Hands each queued packet of `datagram` to on_packet, in order; the
  // packet's payload points into `datagram`. Returns the packets handed.
  // `datagram` must be aligned for nlmsghdr (4 bytes).
  size_t read(std::span<const std::byte> datagram, ReceiveClocks clocks,
              const std::function<void(const QueuedPacket&)>& on_packet, NfQueueCounters& counters);

 private:
  bool read_packet(const nlmsghdr* nlh, ReceiveClocks clocks, QueuedPacket& packet,
                   NfQueueCounters& counters) const;
  void note_id(uint32_t id, NfQueueCounters& counters);

  uint16_t queue_num_;
  uint32_t last_id_ = 0;
};

// The errno of the kernel's answer to the configuration message `seq` (0:
// acknowledged), or nothing when `datagram` holds no NLMSG_ERROR of that
// sequence number (queued packets that came before it, say).
std::optional<int> acknowledgement_error(std::span<const std::byte> datagram, uint32_t seq);

// The kernel's own counters for a queue, from
// /proc/net/netfilter/nfnetlink_queue (of the caller's network namespace).
struct KernelQueueCounters {
  bool found = false;
  uint64_t queue_total = 0;    // packets waiting for a verdict now
  uint64_t queue_dropped = 0;  // dropped because the queue was full (not fail-open)
  uint64_t user_dropped = 0;   // netlink delivery failed (ENOBUFS; not fail-open)
  uint64_t id_sequence = 0;    // last packet id assigned
};
KernelQueueCounters read_kernel_queue_counters(uint16_t queue_num);

class NfQueue {
 public:
  static constexpr uint32_t kAccept = 1;  // NF_ACCEPT
  static constexpr uint32_t kDrop = 0;    // NF_DROP

  explicit NfQueue(const NfQueueConfig& config);
  ~NfQueue();
  NfQueue(const NfQueue&) = delete;
  NfQueue& operator=(const NfQueue&) = delete;

  int fd() const;
  uint16_t queue_num() const { return config_.queue_num; }
  const NfQueueConfig& config() const { return config_; }

  // Reads the messages available now, up to max_packets, with recvmmsg (one
  // syscall per batch of up to kReceiveBatch messages; a short batch means
  // the socket is drained, so no extra EAGAIN call), and calls on_packet for
  // each. Returns the number of packets. The bound keeps timers serviced
  // under overload; epoll is level-triggered, so the rest comes next pass.
  size_t receive(const std::function<void(const QueuedPacket&)>& on_packet,
                 size_t max_packets = 2 * kReceiveBatch);

  static constexpr size_t kReceiveBatch = 64;

  // Appends a verdict; with a replacement payload the packet is rewritten.
  void verdict(uint32_t id, uint32_t verdict, std::span<const uint8_t> new_payload = {});
  // Appends a batch verdict for every queued id <= id.
  void batch_verdict(uint32_t id, uint32_t verdict);
  // Sends what was appended. Returns false if the kernel refused it.
  bool flush();

  const NfQueueCounters& counters() const { return counters_; }

 private:
  void send_config(const std::function<void(char*)>& build, const char* what);
  char* append_slot(size_t max_bytes);

  NfQueueConfig config_;
  mnl_socket* socket_ = nullptr;
  // A datagram socket with SO_TIMESTAMPNS on, kept for the queue's life:
  // the kernel stamps packets (and so fills NFQA_TIMESTAMP) only while some
  // socket asks for receive timestamps.
  common::FileDescriptor stamp_keeper_;
  void setup_receive_batch();

  std::vector<std::byte> receive_buffer_;  // configuration answers
  // recvmmsg: batch_slots_ message buffers of slot_bytes_ each, in one block.
  size_t slot_bytes_ = 0;
  size_t batch_slots_ = 0;
  std::vector<std::byte> batch_storage_;
  std::vector<mmsghdr> batch_headers_;
  std::vector<iovec> batch_iovecs_;
  std::vector<sockaddr_nl> batch_sources_;
  std::vector<char> send_buffer_;
  size_t send_used_ = 0;
  QueueMessageReader reader_;
  NfQueueCounters counters_;
};

}  // namespace nabla::injector
