#pragma once
// Small clients used by the integration tests that drive nabla-tier chains:
// a TCP connect from inside a namespace that retries until the tier listens,
// and one HTTP GET whose full response head is read.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <thread>

#include "nabla/common/fd.hh"
#include "nabla/common/ip_address.hh"
#include "nabla/common/netns.hh"

namespace nabla::testing {

inline sockaddr_in ipv4_address(const std::string& ip, uint16_t port) {
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(port);
  ::inet_pton(AF_INET, ip.c_str(), &sa.sin_addr);
  return sa;
}

// Connects inside `ns` to ip:port (IPv4 or IPv6; optionally from `source`,
// of the same family), retrying for up to 5 s until something listens; a test
// failure (and an invalid fd) after.
inline common::FileDescriptor connect_in(const common::NetNamespace& ns, const std::string& ip,
                                         uint16_t port, const char* source = nullptr) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  const auto address = common::IpAddress::parse(ip);
  if (!address) {
    ADD_FAILURE() << "not an address: " << ip;
    return common::FileDescriptor();
  }
  sockaddr_storage sa{};
  const socklen_t sa_len = common::to_sockaddr({*address, port}, sa);
  while (std::chrono::steady_clock::now() < deadline) {
    common::FileDescriptor fd = ns.socket(sa.ss_family, SOCK_STREAM, 0);
    if (source != nullptr) {
      sockaddr_storage src{};
      const auto source_address = common::IpAddress::parse(source);
      if (!source_address) ADD_FAILURE() << "not an address: " << source;
      const socklen_t src_len =
          common::to_sockaddr({source_address.value_or(common::IpAddress()), 0}, src);
      ::bind(fd.get(), reinterpret_cast<const sockaddr*>(&src), src_len);
    }
    if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&sa), sa_len) == 0) return fd;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ADD_FAILURE() << "cannot connect to " << ip << ":" << port;
  return common::FileDescriptor();
}

// Sends one GET and reads the response head; true for a 200 (the tiers
// answer with an empty body unless configured otherwise).
inline bool http_get_ok(const common::FileDescriptor& fd, std::string_view path = "/view") {
  const std::string request = "GET " + std::string(path) + " HTTP/1.1\r\nHost: tier\r\n\r\n";
  fd.write_all(request);
  std::string buf;
  char chunk[4096];
  while (buf.find("\r\n\r\n") == std::string::npos) {
    const ssize_t r = ::recv(fd.get(), chunk, sizeof chunk, 0);
    if (r <= 0) return false;
    buf.append(chunk, static_cast<size_t>(r));
  }
  return buf.rfind("HTTP/1.1 200", 0) == 0;
}

}  // namespace nabla::testing
