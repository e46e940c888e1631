// Pooled keep-alive downstream connections; see downstream_pool.hh.
#include "nabla/tier/downstream_pool.hh"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "nabla/common/clock.hh"
#include "nabla/common/fd.hh"
#include "nabla/loadgen/http_message.hh"

namespace nabla::tier {

namespace {

using common::monotonic_ns;
using UniqueFd = common::FileDescriptor;

// A pool larger than this closes returned connections instead of keeping them.
constexpr size_t kMaxIdle = 256;

int remaining_ms(int64_t deadline_ns) {
  const int64_t left = deadline_ns - monotonic_ns();
  if (left <= 0) return 0;
  return static_cast<int>(std::min<int64_t>((left + 999'999) / 1'000'000, 60'000));
}

enum class SlotState { kSending, kReceiving, kDone };

struct Slot {
  UniqueFd fd;
  bool reused = false;
  bool retried = false;
  size_t sent = 0;
  std::string buf;
  SlotState state = SlotState::kSending;
  bool ok = false;
  bool keep = false;
};

std::string get_request(std::string_view path, const std::string& host) {
  std::string request;
  request.reserve(path.size() + host.size() + 64);
  request.append("GET ").append(path).append(" HTTP/1.1\r\nHost: ").append(host);
  request.append("\r\nContent-Length: 0\r\n\r\n");
  return request;
}

// One send() of what is left of the request; false when the connection
// failed.
bool send_some(Slot& slot, std::string_view request) {
  const ssize_t w =
      ::send(slot.fd.get(), request.data() + slot.sent, request.size() - slot.sent, MSG_NOSIGNAL);
  if (w < 0) return errno == EAGAIN || errno == EINTR;
  slot.sent += static_cast<size_t>(w);
  if (slot.sent == request.size()) slot.state = SlotState::kReceiving;
  return true;
}

// One recv() and a parse of the response so far; false when the connection
// failed or closed. A complete (or unparseable) response ends the slot.
bool receive_some(Slot& slot) {
  char chunk[16 * 1024];
  const ssize_t r = ::recv(slot.fd.get(), chunk, sizeof chunk, 0);
  if (r <= 0) return r < 0 && (errno == EAGAIN || errno == EINTR);
  slot.buf.append(chunk, static_cast<size_t>(r));
  const loadgen::ResponseParse parsed = loadgen::parse_http_response(slot.buf);
  if (parsed.status == loadgen::ParseStatus::kIncomplete) return true;
  slot.state = SlotState::kDone;
  if (parsed.status == loadgen::ParseStatus::kComplete) {
    slot.ok = parsed.head.status >= 200 && parsed.head.status < 300;
    slot.keep = parsed.head.keep_alive && parsed.head.consumed == slot.buf.size();
  }
  return true;
}

}  // namespace

DownstreamPool::DownstreamPool(std::string tier_name, const TierAddress& address,
                               int64_t timeout_ns, int64_t wait_slice_ns)
    : tier_name_(std::move(tier_name)), timeout_ns_(timeout_ns), wait_slice_ns_(wait_slice_ns) {
  if (address.host.find(':') != std::string::npos) {
    auto* sa = reinterpret_cast<sockaddr_in6*>(&addr_);
    sa->sin6_family = AF_INET6;
    sa->sin6_port = htons(address.port);
    if (inet_pton(AF_INET6, address.host.c_str(), &sa->sin6_addr) != 1) {
      throw std::invalid_argument("tier " + tier_name_ + ": bad IPv6 address " + address.host);
    }
    addr_len_ = sizeof(sockaddr_in6);
  } else {
    auto* sa = reinterpret_cast<sockaddr_in*>(&addr_);
    sa->sin_family = AF_INET;
    sa->sin_port = htons(address.port);
    if (inet_pton(AF_INET, address.host.c_str(), &sa->sin_addr) != 1) {
      throw std::invalid_argument("tier " + tier_name_ + ": bad IPv4 address " + address.host);
    }
    addr_len_ = sizeof(sockaddr_in);
  }
}

UniqueFd DownstreamPool::acquire(bool& reused) {
  reused = false;
  {
    std::lock_guard lock(mu_);
    if (!idle_.empty()) {
      UniqueFd fd = std::move(idle_.back());
      idle_.pop_back();
      reused = true;
      return fd;
    }
  }
  UniqueFd fd(::socket(addr_.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return fd;
  const int one = 1;
  ::setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  connects_.fetch_add(1, std::memory_order_relaxed);
  if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&addr_), addr_len_) == 0) return fd;
  if (errno != EINPROGRESS) return UniqueFd();
  pollfd p{fd.get(), POLLOUT, 0};
  if (::poll(&p, 1, remaining_ms(monotonic_ns() + timeout_ns_)) != 1) return UniqueFd();
  int err = 0;
  socklen_t len = sizeof err;
  if (::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &len) != 0 || err != 0) return UniqueFd();
  return fd;
}

void DownstreamPool::release(UniqueFd fd) {
  std::lock_guard lock(mu_);
  if (idle_.size() < kMaxIdle) idle_.push_back(std::move(fd));
}

int DownstreamPool::wait(std::vector<pollfd>& fds, int64_t deadline_ns) {
  if (wait_slice_ns_ <= 0) return ::poll(fds.data(), fds.size(), remaining_ms(deadline_ns));
  const int64_t ns = std::clamp<int64_t>(deadline_ns - monotonic_ns(), 0, wait_slice_ns_);
  const timespec slice{ns / 1'000'000'000, ns % 1'000'000'000};
  const int n = ::ppoll(fds.data(), fds.size(), &slice, nullptr);
  if (n == 0) wait_slices_.fetch_add(1, std::memory_order_relaxed);
  return n;
}

int DownstreamPool::call_concurrent(std::string_view path, int count) {
  const std::string request = get_request(path, tier_name_);
  const int64_t deadline = monotonic_ns() + timeout_ns_;
  std::vector<Slot> slots(static_cast<size_t>(std::max(count, 0)));
  for (auto& slot : slots) {
    slot.fd = acquire(slot.reused);
    if (!slot.fd.valid()) slot.state = SlotState::kDone;
  }
  // A reused connection the server has meanwhile closed fails before any
  // byte of the response arrives; such a slot gets one fresh connection.
  auto fail_or_retry = [this](Slot& slot) {
    if (slot.reused && !slot.retried && slot.buf.empty()) {
      slot.retried = true;
      slot.reused = false;
      slot.sent = 0;
      slot.fd.reset();
      {
        std::lock_guard lock(mu_);
        idle_.clear();  // its siblings are likely stale too
      }
      slot.fd = acquire(slot.reused);
      if (slot.fd.valid()) {
        slot.state = SlotState::kSending;
        return;
      }
    }
    slot.state = SlotState::kDone;
  };

  std::vector<pollfd> fds;
  std::vector<Slot*> polled;
  while (true) {
    fds.clear();
    polled.clear();
    for (auto& slot : slots) {
      if (slot.state == SlotState::kDone) continue;
      fds.push_back({slot.fd.get(),
                     static_cast<short>(slot.state == SlotState::kSending ? POLLOUT : POLLIN), 0});
      polled.push_back(&slot);
    }
    if (fds.empty()) break;
    if (remaining_ms(deadline) == 0) break;
    const int n = wait(fds, deadline);
    if (n < 0 && errno != EINTR) break;
    for (size_t i = 0; n > 0 && i < fds.size(); ++i) {
      if (fds[i].revents == 0) continue;
      Slot& slot = *polled[i];
      const bool alive =
          slot.state == SlotState::kSending ? send_some(slot, request) : receive_some(slot);
      if (!alive) fail_or_retry(slot);
    }
  }
  int ok = 0;
  for (auto& slot : slots) {
    if (slot.ok) ++ok;
    if (slot.ok && slot.keep && slot.state == SlotState::kDone) release(std::move(slot.fd));
  }
  ok_.fetch_add(static_cast<uint64_t>(ok), std::memory_order_relaxed);
  failed_.fetch_add(static_cast<uint64_t>(count - ok), std::memory_order_relaxed);
  return ok;
}

DownstreamCounters DownstreamPool::counters() const {
  DownstreamCounters c;
  c.requests_ok = ok_.load(std::memory_order_relaxed);
  c.requests_failed = failed_.load(std::memory_order_relaxed);
  c.connects = connects_.load(std::memory_order_relaxed);
  c.wait_slices = wait_slices_.load(std::memory_order_relaxed);
  return c;
}

size_t DownstreamPool::idle_connections() const {
  std::lock_guard lock(mu_);
  return idle_.size();
}

}  // namespace nabla::tier
