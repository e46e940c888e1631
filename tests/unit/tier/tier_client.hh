#pragma once
// A small blocking HTTP client for nabla-tier tests (loopback only).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "nabla/loadgen/http_message.hh"

namespace nabla::tier::testing {

struct Reply {
  int status = 0;  // 0: no complete response (closed or timed out)
  std::string head;
  size_t body_bytes = 0;
  bool keep_alive = false;

  // The value of header `name`, or -1 when missing.
  int64_t header_int(std::string_view name) const {
    const std::string needle = "\r\n" + std::string(name) + ": ";
    const size_t pos = head.find(needle);
    if (pos == std::string::npos) return -1;
    return std::stoll(head.substr(pos + needle.size()));
  }
};

class TestClient {
 public:
  explicit TestClient(uint16_t port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    timeval tv{5, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_port = htons(port);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0;
  }
  ~TestClient() { ::close(fd_); }
  TestClient(const TestClient&) = delete;
  TestClient& operator=(const TestClient&) = delete;

  bool connected() const { return connected_; }

  bool send_raw(std::string_view bytes) {
    while (!bytes.empty()) {
      const ssize_t w = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
      if (w <= 0) return false;
      bytes.remove_prefix(static_cast<size_t>(w));
    }
    return true;
  }

  Reply read_reply() {
    Reply reply;
    char chunk[16384];
    while (true) {
      const loadgen::ResponseParse p = loadgen::parse_http_response(buf_);
      if (p.status == loadgen::ParseStatus::kComplete) {
        reply.status = p.head.status;
        reply.head = buf_.substr(0, buf_.find("\r\n\r\n") + 2);
        reply.body_bytes = p.head.body_bytes;
        reply.keep_alive = p.head.keep_alive;
        buf_.erase(0, p.head.consumed);
        return reply;
      }
      if (p.status == loadgen::ParseStatus::kBad) return reply;
      const ssize_t r = ::recv(fd_, chunk, sizeof chunk, 0);
      if (r <= 0) return reply;
      buf_.append(chunk, static_cast<size_t>(r));
    }
  }

  Reply get(std::string_view path) {
    std::string req = "GET " + std::string(path) + " HTTP/1.1\r\nHost: t\r\n\r\n";
    if (!send_raw(req)) return {};
    return read_reply();
  }

  // True when the server closed the connection (recv returns 0).
  bool closed_by_peer() {
    char c;
    return buf_.empty() && ::recv(fd_, &c, 1, 0) == 0;
  }

 private:
  int fd_ = -1;
  bool connected_ = false;
  std::string buf_;
};

}  // namespace nabla::tier::testing
