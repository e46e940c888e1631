#include "nabla/loadgen/timestamping.hh"

#include <linux/errqueue.h>
#include <linux/net_tstamp.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <system_error>

#include "nabla/common/clock.hh"
#include "nabla/common/fd.hh"

namespace nabla::loadgen {

const char* to_string(TimestampSource source) {
  switch (source) {
    case TimestampSource::kHardware:
      return "hardware";
    case TimestampSource::kSoftware:
      return "software";
    case TimestampSource::kUser:
      return "user";
  }
  return "user";
}

void enable_software_timestamps(int fd) {
  int flags = SOF_TIMESTAMPING_RX_SOFTWARE | SOF_TIMESTAMPING_TX_SOFTWARE |
              SOF_TIMESTAMPING_SOFTWARE | SOF_TIMESTAMPING_OPT_ID | SOF_TIMESTAMPING_OPT_TSONLY;
  if (::setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPING, &flags, sizeof flags) != 0) {
    throw std::system_error(errno, std::system_category(), "setsockopt(SO_TIMESTAMPING)");
  }
}

void enable_hardware_timestamps(int fd) {
  int flags = SOF_TIMESTAMPING_RX_SOFTWARE | SOF_TIMESTAMPING_TX_SOFTWARE |
              SOF_TIMESTAMPING_SOFTWARE | SOF_TIMESTAMPING_RX_HARDWARE |
              SOF_TIMESTAMPING_TX_HARDWARE | SOF_TIMESTAMPING_RAW_HARDWARE |
              SOF_TIMESTAMPING_OPT_ID | SOF_TIMESTAMPING_OPT_TSONLY;
  if (::setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPING, &flags, sizeof flags) != 0) {
    throw std::system_error(errno, std::system_category(), "setsockopt(SO_TIMESTAMPING)");
  }
}

KernelStamps parse_scm_timestamping(const void* data, size_t len) {
  KernelStamps out;
  if (len < sizeof(scm_timestamping)) return out;
  scm_timestamping ts;
  std::memcpy(&ts, data, sizeof ts);
  auto ns = [](const timespec& t) -> std::optional<int64_t> {
    if (t.tv_sec == 0 && t.tv_nsec == 0) return std::nullopt;
    return int64_t{t.tv_sec} * 1'000'000'000 + t.tv_nsec;
  };
  out.software_ns = ns(ts.ts[0]);
  out.hardware_ns = ns(ts.ts[2]);
  return out;
}

int64_t clock_offset_ns() {
  int64_t a = common::monotonic_ns();
  int64_t r = common::realtime_ns();
  int64_t b = common::monotonic_ns();
  return r - (a + (b - a) / 2);
}

RecvResult recv_with_timestamp(int fd, char* buf, size_t len) {
  RecvResult out;
  iovec iov{buf, len};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(scm_timestamping)) + 64];
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  out.bytes = ::recvmsg(fd, &msg, MSG_DONTWAIT);
  if (out.bytes <= 0) return out;
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SO_TIMESTAMPING) {
      const KernelStamps k = parse_scm_timestamping(CMSG_DATA(c), c->cmsg_len - CMSG_LEN(0));
      out.software_rx_ns = k.software_ns;
      out.hardware_rx_ns = k.hardware_ns;
    }
  }
  return out;
}

std::vector<TxTimestamp> read_tx_timestamps(int fd) {
  std::vector<TxTimestamp> out;
  read_tx_timestamps(fd, out);
  return out;
}

void read_tx_timestamps(int fd, std::vector<TxTimestamp>& out, std::optional<uint32_t> last_key) {
  out.clear();
  for (;;) {
    alignas(cmsghdr) char control[512];
    char data[1];
    iovec iov{data, sizeof data};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    if (::recvmsg(fd, &msg, MSG_ERRQUEUE | MSG_DONTWAIT) < 0) break;
    std::optional<KernelStamps> stamp;
    const sock_extended_err* ee = nullptr;
    sock_extended_err ee_copy;
    for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
      if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SO_TIMESTAMPING) {
        stamp = parse_scm_timestamping(CMSG_DATA(c), c->cmsg_len - CMSG_LEN(0));
      } else if ((c->cmsg_level == SOL_IP && c->cmsg_type == IP_RECVERR) ||
                 (c->cmsg_level == SOL_IPV6 && c->cmsg_type == IPV6_RECVERR)) {
        std::memcpy(&ee_copy, CMSG_DATA(c), sizeof ee_copy);
        ee = &ee_copy;
      }
    }
    if (stamp && (stamp->software_ns || stamp->hardware_ns) && ee != nullptr &&
        ee->ee_errno == ENOMSG && ee->ee_origin == SO_EE_ORIGIN_TIMESTAMPING &&
        ee->ee_info == SCM_TSTAMP_SND) {
      out.push_back({ee->ee_data, stamp->software_ns.value_or(0), stamp->hardware_ns.value_or(0)});
      if (last_key && ee->ee_data == *last_key) return;  // nothing newer was sent
    }
  }
}

}  // namespace nabla::loadgen
