#include "nabla/injector/nfqueue.hh"

#include <arpa/inet.h>
#include <endian.h>
#include <fcntl.h>
#include <libmnl/libmnl.h>
#include <libnetfilter_queue/libnetfilter_queue.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netfilter/nfnetlink_queue.h>
#include <poll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <system_error>

#include "nabla/common/clock.hh"
#include "nabla/common/log.hh"
#include "nabla/common/netlink_reader.hh"

namespace nabla::injector {

namespace {

// 64 KiB packet + one page of netlink framing (MNL_SOCKET_BUFFER_SIZE is a
// sysconf() call, so spell out its usual ceiling).
constexpr size_t kReceiveBufferBytes = 0xffff + 8192;
constexpr size_t kConfigMessageBytes = 8192;
constexpr size_t kSendBufferBytes = 256 * 1024;
// One verdict message without payload: header + nfgenmsg + verdict attribute.
constexpr size_t kVerdictMessageBytes = 64;

[[noreturn]] void throw_errno(const std::string& what) {
  throw std::system_error(errno, std::system_category(), what);
}

int64_t realtime_ns() {
  timespec ts{};
  ::clock_gettime(CLOCK_REALTIME, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

// CLOCK_MONOTONIC and CLOCK_REALTIME "at the same instant", for moving a
// kernel stamp from one clock to the other. The realtime read sits between
// two monotonic reads; a VM exit or interrupt between them (tens of µs
// here) would shift every converted stamp, so a wide pair is read again
// (up to 3 times, keeping the tightest). mono is the later monotonic read:
// a stamp converted with it can come out late by the pair's width, never
// early, so no packet is released before its delay.
void read_clock_pair(int64_t& mono, int64_t& real) {
  int64_t best_width = INT64_MAX;
  for (int attempt = 0; attempt < 3 && best_width > 1000; ++attempt) {
    const int64_t before = common::monotonic_ns();
    const int64_t r = realtime_ns();
    const int64_t after = common::monotonic_ns();
    if (after - before < best_width) {
      best_width = after - before;
      mono = after;
      real = r;
    }
  }
}

}  // namespace

std::optional<int> acknowledgement_error(std::span<const std::byte> datagram, uint32_t seq) {
  common::netlink::MessageWalk walk(datagram);
  while (const nlmsghdr* nlh = walk.next()) {
    if (nlh->nlmsg_type == NLMSG_ERROR && nlh->nlmsg_seq == seq) {
      return common::netlink::error_code(nlh);
    }
  }
  return std::nullopt;
}

int64_t queued_mono_ns(int64_t stamp_ns, int64_t received_mono_ns, int64_t received_real_ns,
                       int64_t max_age_ns) {
  if (stamp_ns <= 0) return 0;
  // µs resolution, truncated: the truth lies in [stamp, stamp + 1 µs). The
  // latest end is taken, so a delay counted from it never ends early; a
  // stamp within that last µs of the receive counts as "now".
  const int64_t latest = stamp_ns + 999;
  auto age_if_plausible = [&](int64_t received) -> std::optional<int64_t> {
    const int64_t age = received - latest;
    if (age < -999 || age > max_age_ns) return std::nullopt;
    return std::max<int64_t>(age, 0);
  };
  if (const auto age = age_if_plausible(received_real_ns)) return received_mono_ns - *age;
  if (const auto age = age_if_plausible(received_mono_ns)) return received_mono_ns - *age;
  return 0;
}

KernelQueueCounters read_kernel_queue_counters(uint16_t queue_num) {
  KernelQueueCounters out;
  std::FILE* f = std::fopen("/proc/net/netfilter/nfnetlink_queue", "r");
  if (f == nullptr) return out;
  unsigned long long v[9] = {};
  // queue_number peer_portid queue_total copy_mode copy_range queue_dropped
  // user_dropped id_sequence 1
  while (std::fscanf(f, "%llu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3],
                     &v[4], &v[5], &v[6], &v[7], &v[8]) == 9) {
    if (v[0] != queue_num) continue;
    out = {true, v[2], v[5], v[6], v[7]};
    break;
  }
  std::fclose(f);
  return out;
}

NfQueue::NfQueue(const NfQueueConfig& config)
    : config_(config),
      receive_buffer_(kReceiveBufferBytes),
      send_buffer_(kSendBufferBytes),
      reader_(config.queue_num) {
  socket_ = mnl_socket_open2(NETLINK_NETFILTER, SOCK_CLOEXEC);
  if (socket_ == nullptr) throw_errno("mnl_socket_open(NETLINK_NETFILTER)");
  try {
    if (mnl_socket_bind(socket_, 0, MNL_SOCKET_AUTOPID) < 0) throw_errno("mnl_socket_bind");
    send_config(
        [&](char* buf) {
          nlmsghdr* nlh = nfq_nlmsg_put(buf, NFQNL_MSG_CONFIG, config_.queue_num);
          nfq_nlmsg_cfg_put_cmd(nlh, AF_INET, NFQNL_CFG_CMD_BIND);
        },
        "bind");
    send_config(
        [&](char* buf) {
          nlmsghdr* nlh = nfq_nlmsg_put(buf, NFQNL_MSG_CONFIG, config_.queue_num);
          nfq_nlmsg_cfg_put_params(nlh, NFQNL_COPY_PACKET, static_cast<int>(config_.copy_range));
          const uint32_t flags = NFQA_CFG_F_GSO | (config_.fail_open ? NFQA_CFG_F_FAIL_OPEN : 0);
          mnl_attr_put_u32(nlh, NFQA_CFG_FLAGS, htonl(flags));
          mnl_attr_put_u32(nlh, NFQA_CFG_MASK, htonl(NFQA_CFG_F_GSO | NFQA_CFG_F_FAIL_OPEN));
        },
        "params/flags");
    send_config(
        [&](char* buf) {
          nlmsghdr* nlh = nfq_nlmsg_put(buf, NFQNL_MSG_CONFIG, config_.queue_num);
          nfq_nlmsg_cfg_put_qmaxlen(nlh, config_.queue_maxlen);
        },
        "queue maxlen");
    // Receive timestamps on when the queue can use them (a global switch,
    // counted per socket): without them the kernel stamps no received
    // packet and sends no NFQA_TIMESTAMP. Failing is not fatal: delays then
    // count from our receive call.
    if (config_.kernel_stamps) {
      stamp_keeper_ = common::FileDescriptor(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
    }
    if (stamp_keeper_) {
      int on = 1;
      ::setsockopt(stamp_keeper_.get(), SOL_SOCKET, SO_TIMESTAMPNS, &on, sizeof on);
    }
    int one = 1;
    if (mnl_socket_setsockopt(socket_, NETLINK_NO_ENOBUFS, &one, sizeof one) < 0) {
      throw_errno("setsockopt(NETLINK_NO_ENOBUFS)");
    }
    int bytes = config_.receive_buffer_bytes;
    // SO_RCVBUFFORCE (root) passes rmem_max; fall back to SO_RCVBUF.
    if (setsockopt(fd(), SOL_SOCKET, SO_RCVBUFFORCE, &bytes, sizeof bytes) < 0 &&
        setsockopt(fd(), SOL_SOCKET, SO_RCVBUF, &bytes, sizeof bytes) < 0) {
      throw_errno("setsockopt(SO_RCVBUF)");
    }
    setup_receive_batch();
    // Non-blocking from here on: the data path never waits on the socket.
    const int fl = fcntl(fd(), F_GETFL);
    if (fl < 0 || fcntl(fd(), F_SETFL, fl | O_NONBLOCK) < 0) throw_errno("fcntl(O_NONBLOCK)");
  } catch (...) {
    mnl_socket_close(socket_);
    throw;
  }
}

NfQueue::~NfQueue() {
  if (socket_ == nullptr) return;
  // Unbinding makes the kernel drop whatever is still queued; callers release
  // held packets (accept verdicts) before destroying the binding.
  flush();
  alignas(nlmsghdr) char buf[kConfigMessageBytes];
  nlmsghdr* nlh = nfq_nlmsg_put(buf, NFQNL_MSG_CONFIG, config_.queue_num);
  nfq_nlmsg_cfg_put_cmd(nlh, AF_INET, NFQNL_CFG_CMD_UNBIND);
  if (mnl_socket_sendto(socket_, nlh, nlh->nlmsg_len) < 0) {
    common::log_warn("nfqueue ", config_.queue_num, ": unbind failed: ", std::strerror(errno));
  }
  mnl_socket_close(socket_);
}

int NfQueue::fd() const {
  return mnl_socket_get_fd(socket_);
}

void NfQueue::send_config(const std::function<void(char*)>& build, const char* what) {
  alignas(nlmsghdr) char buf[kConfigMessageBytes];
  build(buf);
  auto* nlh = reinterpret_cast<nlmsghdr*>(buf);
  nlh->nlmsg_flags |= NLM_F_ACK;
  nlh->nlmsg_seq = 1;
  const std::string step = "nfqueue " + std::to_string(config_.queue_num) + " " + what;
  if (mnl_socket_sendto(socket_, nlh, nlh->nlmsg_len) < 0) throw_errno(step + ": sendto");
  const int64_t deadline_ns = common::monotonic_ns() + 2'000'000'000;
  while (true) {
    const int64_t left_ms = (deadline_ns - common::monotonic_ns()) / 1'000'000;
    pollfd pfd{fd(), POLLIN, 0};
    const int ready = left_ms > 0 ? ::poll(&pfd, 1, static_cast<int>(left_ms)) : 0;
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) {
      if (ready == 0) errno = ETIMEDOUT;
      throw_errno(step + ": no answer");
    }
    const ssize_t n = mnl_socket_recvfrom(socket_, receive_buffer_.data(), receive_buffer_.size());
    if (n < 0) throw_errno(step + ": recv");
    // Packets queued meanwhile may come first; the answer is this request's
    // NLMSG_ERROR.
    const auto error =
        acknowledgement_error({receive_buffer_.data(), static_cast<size_t>(n)}, nlh->nlmsg_seq);
    if (!error) continue;
    if (*error == 0) return;
    errno = *error;
    throw_errno(step);  // the kernel's answer, e.g. EBUSY, EPERM
  }
}

void NfQueue::setup_receive_batch() {
  // A message is the packet (at most copy_range bytes, up to 64 KiB with GSO)
  // plus netlink framing and attributes (well under a page). Decision: keep
  // the block near 2 MiB, so a full-copy queue gets fewer, larger slots.
  // Slots start 4-byte aligned, as the netlink reader needs.
  slot_bytes_ = NLMSG_ALIGN(std::min<size_t>(config_.copy_range, 0xffff) + 4096);
  batch_slots_ = std::clamp<size_t>((2u << 20) / slot_bytes_, 4, kReceiveBatch);
  batch_storage_.assign(slot_bytes_ * batch_slots_, std::byte{0});
  batch_headers_.assign(batch_slots_, mmsghdr{});
  batch_iovecs_.assign(batch_slots_, iovec{});
  batch_sources_.assign(batch_slots_, sockaddr_nl{});
  for (size_t i = 0; i < batch_slots_; ++i) {
    batch_iovecs_[i] = {batch_storage_.data() + i * slot_bytes_, slot_bytes_};
    msghdr& h = batch_headers_[i].msg_hdr;
    h.msg_iov = &batch_iovecs_[i];
    h.msg_iovlen = 1;
    h.msg_name = &batch_sources_[i];
  }
}

size_t NfQueue::receive(const std::function<void(const QueuedPacket&)>& on_packet,
                        size_t max_packets) {
  ReceiveClocks clocks;
  const uint64_t before = counters_.received;
  size_t taken = 0;
  while (taken < max_packets) {
    const size_t want = std::min(batch_slots_, max_packets - taken);
    for (size_t i = 0; i < want; ++i) {
      batch_headers_[i].msg_hdr.msg_namelen = sizeof(sockaddr_nl);
      batch_headers_[i].msg_hdr.msg_flags = 0;
    }
    const int n =
        ::recvmmsg(fd(), batch_headers_.data(), static_cast<unsigned>(want), MSG_DONTWAIT, nullptr);
    ++counters_.receive_calls;
    if (n < 0) {
      if (errno == ENOBUFS) {
        ++counters_.enobufs;
        continue;
      }
      if (errno == EINTR) continue;
      break;  // EAGAIN: drained
    }
    if (config_.kernel_stamps) {
      read_clock_pair(clocks.mono_ns, clocks.real_ns);
    } else {
      // No realtime stamps reach this queue (only TCP's monotonic pacing
      // stamps): one clock read, and real_ns 0 matches no stamp.
      clocks.mono_ns = common::monotonic_ns();
      clocks.real_ns = 0;
    }
    for (int i = 0; i < n; ++i) {
      const mmsghdr& m = batch_headers_[static_cast<size_t>(i)];
      // Only the kernel (port 0) sends us packets; a truncated message
      // would parse as garbage (mnl_socket_recvfrom's two checks).
      if (batch_sources_[static_cast<size_t>(i)].nl_pid != 0 ||
          (m.msg_hdr.msg_flags & MSG_TRUNC) != 0) {
        ++counters_.malformed;
        continue;
      }
      const auto* datagram = static_cast<const std::byte*>(m.msg_hdr.msg_iov->iov_base);
      reader_.read({datagram, m.msg_len}, clocks, on_packet, counters_);
    }
    taken += static_cast<size_t>(n);
    if (static_cast<size_t>(n) < want) break;  // short batch: nothing more queued
  }
  return static_cast<size_t>(counters_.received - before);
}

char* NfQueue::append_slot(size_t max_bytes) {
  if (send_used_ + max_bytes > send_buffer_.size()) flush();
  if (max_bytes > send_buffer_.size()) send_buffer_.resize(max_bytes);
  return send_buffer_.data() + send_used_;
}

void NfQueue::verdict(uint32_t id, uint32_t verdict, std::span<const uint8_t> new_payload) {
  char* slot = append_slot(kVerdictMessageBytes + MNL_ALIGN(new_payload.size()) + 16);
  nlmsghdr* nlh = nfq_nlmsg_put(slot, NFQNL_MSG_VERDICT, config_.queue_num);
  nfq_nlmsg_verdict_put(nlh, static_cast<int>(id), static_cast<int>(verdict));
  if (!new_payload.empty()) {
    nfq_nlmsg_verdict_put_pkt(nlh, new_payload.data(), static_cast<uint32_t>(new_payload.size()));
  }
  send_used_ += nlh->nlmsg_len;
  ++counters_.verdicts_sent;
}

void NfQueue::batch_verdict(uint32_t id, uint32_t verdict) {
  char* slot = append_slot(kVerdictMessageBytes);
  nlmsghdr* nlh = nfq_nlmsg_put(slot, NFQNL_MSG_VERDICT_BATCH, config_.queue_num);
  nfq_nlmsg_verdict_put(nlh, static_cast<int>(id), static_cast<int>(verdict));
  send_used_ += nlh->nlmsg_len;
  ++counters_.batch_verdicts_sent;
}

bool NfQueue::flush() {
  if (send_used_ == 0) return true;
  const int64_t start_ns = common::monotonic_ns();
  const ssize_t n = mnl_socket_sendto(socket_, send_buffer_.data(), send_used_);
  counters_.send_ns += static_cast<uint64_t>(common::monotonic_ns() - start_ns);
  send_used_ = 0;
  ++counters_.sends;
  if (n < 0) {
    ++counters_.send_errors;
    return false;
  }
  return true;
}

}  // namespace nabla::injector
