#pragma once
// A TCP port forward for tests, as an SSH tunnel or a NAT's port forward
// would be: connections to 127.0.0.1:port() are relayed byte for byte to
// 127.0.0.1:target, so the server behind it is reached at another address
// than its own. Its sockets live in `ns` when given (the threads stay in the
// test's namespace), else in the test's. The destructor stops accepting,
// closes every relayed connection and joins its threads.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <system_error>
#include <thread>
#include <vector>

#include "nabla/common/fd.hh"
#include "nabla/common/netns.hh"

namespace nabla::testing {

class TcpForward {
 public:
  explicit TcpForward(uint16_t target, const common::NetNamespace* ns = nullptr)
      : target_(target), ns_(ns), stop_(common::FileDescriptor::pipe()) {
    listener_ = tcp_socket();
    sockaddr_in at = loopback(0);
    socklen_t len = sizeof at;
    if (::bind(listener_.get(), reinterpret_cast<sockaddr*>(&at), sizeof at) != 0 ||
        ::listen(listener_.get(), 16) != 0 ||
        ::getsockname(listener_.get(), reinterpret_cast<sockaddr*>(&at), &len) != 0) {
      throw std::system_error(errno, std::generic_category(), "TcpForward: listen");
    }
    port_ = ntohs(at.sin_port);
    acceptor_ = std::thread([this] { accept_loop(); });
  }
  ~TcpForward() {
    stop_.write_end.reset();  // every poll below sees the hang-up
    acceptor_.join();
    for (auto& relay : relays_) relay.join();
  }
  TcpForward(const TcpForward&) = delete;
  TcpForward& operator=(const TcpForward&) = delete;

  uint16_t port() const { return port_; }

 private:
  static sockaddr_in loopback(uint16_t port) {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(port);
    return a;
  }
  common::FileDescriptor tcp_socket() const {
    return ns_ != nullptr ? ns_->socket(AF_INET, SOCK_STREAM, 0)
                          : common::FileDescriptor::socket(AF_INET, SOCK_STREAM, 0);
  }
  // Whether `fd` is readable before the forward is stopped.
  bool wait_readable(int fd) const {
    pollfd fds[2] = {{fd, POLLIN, 0}, {stop_.read_end.get(), POLLIN, 0}};
    while (::poll(fds, 2, -1) < 0) {
      if (errno != EINTR) return false;
    }
    return fds[1].revents == 0;
  }
  void accept_loop() {
    while (wait_readable(listener_.get())) {
      common::FileDescriptor client(::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC));
      if (!client) continue;
      common::FileDescriptor server = tcp_socket();
      const sockaddr_in to = loopback(target_);
      if (::connect(server.get(), reinterpret_cast<const sockaddr*>(&to), sizeof to) != 0) {
        continue;  // nothing listens there: the client sees its connection closed
      }
      relays_.emplace_back(
          [this, c = std::move(client), s = std::move(server)] { relay(c.get(), s.get()); });
    }
  }
  // Copies both ways until either side closes or the forward stops.
  void relay(int a, int b) const {
    char buf[16384];
    pollfd fds[3] = {{a, POLLIN, 0}, {b, POLLIN, 0}, {stop_.read_end.get(), POLLIN, 0}};
    while (true) {
      if (::poll(fds, 3, -1) < 0) {
        if (errno == EINTR) continue;
        return;
      }
      if (fds[2].revents != 0) return;
      for (int from = 0; from < 2; ++from) {
        if (fds[from].revents == 0) continue;
        const ssize_t n = ::read(fds[from].fd, buf, sizeof buf);
        if (n <= 0 || !write_all(fds[1 - from].fd, buf, static_cast<size_t>(n))) return;
      }
    }
  }
  static bool write_all(int fd, const char* data, size_t n) {
    while (n > 0) {
      const ssize_t w = ::send(fd, data, n, MSG_NOSIGNAL);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) return false;
      data += w;
      n -= static_cast<size_t>(w);
    }
    return true;
  }

  uint16_t target_;
  const common::NetNamespace* ns_;
  common::FileDescriptor::Pipe stop_;
  common::FileDescriptor listener_;
  uint16_t port_ = 0;
  std::thread acceptor_;
  std::vector<std::thread> relays_;  // touched by the acceptor thread only, until it is joined
};

}  // namespace nabla::testing
