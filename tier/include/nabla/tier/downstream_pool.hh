#pragma once
// Pooled keep-alive HTTP/1.1 connections from one nabla-tier to one
// downstream tier. Thread-safe: workers borrow connections, run a batch of
// requests on them and return the ones that stayed healthy. Data path: never
// throws, counts failures instead.
#include <poll.h>
#include <sys/socket.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "nabla/common/fd.hh"
#include "nabla/tier/tier_config.hh"

namespace nabla::tier {

struct DownstreamCounters {
  uint64_t requests_ok = 0;
  uint64_t requests_failed = 0;  // connect/send/receive error, timeout, non-2xx
  uint64_t connects = 0;         // new connections opened (pool misses)
  uint64_t wait_slices = 0;      // waits' slices that ended with no reply yet
};

class DownstreamPool {
 public:
  // `address` must be a numeric IPv4/IPv6 address (TierAddress guarantees it).
  // With `wait_slice_ns` > 0 a wait for replies blocks at most that long at a
  // time and blocks again until they are in (see TierConfig::wait_slice_ns).
  DownstreamPool(std::string tier_name, const TierAddress& address, int64_t timeout_ns,
                 int64_t wait_slice_ns = 0);
  ~DownstreamPool() = default;
  DownstreamPool(const DownstreamPool&) = delete;
  DownstreamPool& operator=(const DownstreamPool&) = delete;

  // Sends `count` GET requests for `path` at once, each on its own pooled
  // connection, and waits until all responses are in or the timeout passes.
  // Returns how many succeeded (2xx). count == 1 is one plain call.
  int call_concurrent(std::string_view path, int count);

  DownstreamCounters counters() const;
  size_t idle_connections() const;

 private:
  // An idle connection (reused = true) or a new one; invalid on failure.
  common::FileDescriptor acquire(bool& reused);
  void release(common::FileDescriptor fd);
  // One poll of `fds` until `deadline_ns` at the latest (a slice of the
  // time left when sliced).
  int wait(std::vector<pollfd>& fds, int64_t deadline_ns);

  std::string tier_name_;
  sockaddr_storage addr_{};
  socklen_t addr_len_ = 0;
  int64_t timeout_ns_;
  int64_t wait_slice_ns_;
  mutable std::mutex mu_;
  std::vector<common::FileDescriptor> idle_;
  std::atomic<uint64_t> ok_{0};
  std::atomic<uint64_t> failed_{0};
  std::atomic<uint64_t> connects_{0};
  std::atomic<uint64_t> wait_slices_{0};
};

}  // namespace nabla::tier
