#pragma once
// A small echo server for engine tests: one thread, one epoll loop, listening
// on 127.0.0.1 (port chosen by the kernel). Each complete echo frame
// (protocol.hh) is answered with the same id and payload after a fixed delay
// (a timer, not a busy CPU: an infinite-server delay station), with the delay
// reported as service time. Optional close_after: the server closes a
// connection after that many frames, to exercise reconnects.
#include <atomic>
#include <cstdint>
#include <thread>

#include "nabla/common/fd.hh"

namespace nabla::tier {

struct EchoServerOptions {
  int64_t delay_ns = 0;
  uint64_t close_after = 0;  // 0 = never
};

class EchoServer {
 public:
  // Throws std::system_error naming the failing call.
  explicit EchoServer(EchoServerOptions options = {});
  ~EchoServer();
  EchoServer(const EchoServer&) = delete;
  EchoServer& operator=(const EchoServer&) = delete;

  uint16_t port() const { return port_; }
  uint64_t frames() const { return frames_.load(); }
  uint64_t accepted() const { return accepted_.load(); }

 private:
  void loop();

  EchoServerOptions options_;
  common::FileDescriptor listen_;
  common::FileDescriptor stop_;
  uint16_t port_ = 0;
  std::atomic<uint64_t> frames_{0};
  std::atomic<uint64_t> accepted_{0};
  std::thread thread_;
};

}  // namespace nabla::tier
