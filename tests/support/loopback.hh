#pragma once
// Loopback helpers for tests that start their own servers on 127.0.0.1.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>

namespace nabla::testing {

// Binds `fd` to 127.0.0.1 on a port the kernel picks; `bound` is the
// address it got. False when either step failed.
inline bool bind_loopback(int fd, sockaddr_in& bound) {
  bound = sockaddr_in{};
  bound.sin_family = AF_INET;
  bound.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof bound;
  return ::bind(fd, reinterpret_cast<sockaddr*>(&bound), sizeof bound) == 0 &&
         ::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &len) == 0;
}

// A port on 127.0.0.1 that was free a moment ago (the kernel's pick).
inline uint16_t free_loopback_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  const uint16_t port = bind_loopback(fd, a) ? ntohs(a.sin_port) : 0;
  ::close(fd);
  return port;
}

// Whether something accepts TCP connections on 127.0.0.1:port now.
inline bool loopback_accepts(uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(port);
  const bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  ::close(fd);
  return ok;
}

}  // namespace nabla::testing
