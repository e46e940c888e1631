#pragma once
// Software RX timestamps switched on for the whole machine before a test
// measures. The kernel stamps received packets only while some socket asks
// for it, and it switches that on through deferred work the first time one
// asks (net_enable_timestamp), so the first replies a fresh socket reads
// can be unstamped; how many depends on how soon that work runs, that is on
// the machine's load. Holding one stamping socket open, and waiting until
// a datagram it sends itself comes back stamped, leaves no such window:
// every packet received while the object lives is stamped.
#include <linux/net_tstamp.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <ctime>
#include <thread>

#include "loopback.hh"

namespace nabla::testing {

class RxStampingOn {
 public:
  RxStampingOn() {
    fd_ = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    const int flags = SOF_TIMESTAMPING_RX_SOFTWARE | SOF_TIMESTAMPING_SOFTWARE;
    if (fd_ < 0 || !bind_loopback(fd_, a) ||
        ::setsockopt(fd_, SOL_SOCKET, SO_TIMESTAMPING, &flags, sizeof flags) != 0) {
      return;
    }
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!on_ && std::chrono::steady_clock::now() < give_up) {
      on_ = stamped_echo(a);
      if (!on_) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
  ~RxStampingOn() {
    if (fd_ >= 0) ::close(fd_);
  }
  RxStampingOn(const RxStampingOn&) = delete;
  RxStampingOn& operator=(const RxStampingOn&) = delete;

  // True once a datagram came back with a software RX stamp.
  bool on() const { return on_; }

 private:
  bool stamped_echo(const sockaddr_in& self) {
    const char byte = 'x';
    if (::sendto(fd_, &byte, 1, 0, reinterpret_cast<const sockaddr*>(&self), sizeof self) != 1) {
      return false;
    }
    char data = 0;
    alignas(cmsghdr) char control[256];
    iovec iov{&data, 1};
    msghdr m{};
    m.msg_iov = &iov;
    m.msg_iovlen = 1;
    m.msg_control = control;
    m.msg_controllen = sizeof control;
    if (::recvmsg(fd_, &m, 0) != 1) return false;
    for (cmsghdr* c = CMSG_FIRSTHDR(&m); c != nullptr; c = CMSG_NXTHDR(&m, c)) {
      if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SO_TIMESTAMPING) continue;
      timespec ts[3];
      std::memcpy(ts, CMSG_DATA(c), sizeof ts);
      if (ts[0].tv_sec != 0 || ts[0].tv_nsec != 0) return true;
    }
    return false;
  }

  int fd_ = -1;
  bool on_ = false;
};

}  // namespace nabla::testing
