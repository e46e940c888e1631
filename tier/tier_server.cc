// nabla-tier's I/O thread; see tier_server.hh. Request execution (workers,
// downstream calls) is in tier_worker.cc.
#include "nabla/tier/tier_server.hh"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

#include "nabla/common/clock.hh"
#include "nabla/common/error.hh"
#include "nabla/common/fd.hh"
#include "nabla/loadgen/http_message.hh"

namespace nabla::tier {

namespace {

using common::monotonic_ns;
using UniqueFd = common::FileDescriptor;

constexpr uint64_t kListenerId = 0;
constexpr uint64_t kWakeId = 1;
// Reading stops while this much is buffered; framing refuses anything larger.
constexpr size_t kMaxBuffered = loadgen::kMaxHeadBytes + loadgen::kMaxBodyBytes + 64 * 1024;
constexpr int64_t kDownstreamTimeoutNs = 10'000'000'000;

const char* reason_phrase(int status) {
  switch (status) {
    case 400:
      return "Bad Request";
    case 413:
      return "Content Too Large";
    case 431:
      return "Request Header Fields Too Large";
    case 501:
      return "Not Implemented";
    case 505:
      return "HTTP Version Not Supported";
    default:
      return "Error";
  }
}

std::string error_response(int status) {
  std::string body = std::to_string(status) + " " + reason_phrase(status) + "\n";
  std::string r = "HTTP/1.1 " + std::to_string(status) + " " + reason_phrase(status) + "\r\n";
  r += "Content-Type: text/plain\r\nConnection: close\r\nContent-Length: ";
  r += std::to_string(body.size()) + "\r\n\r\n" + body;
  return r;
}

}  // namespace

struct TierServer::Connection {
  uint64_t id = 0;
  UniqueFd fd;
  std::string in;
  std::string out;
  size_t out_off = 0;
  bool busy = false;         // a request is with a worker
  bool close_after = false;  // close once `out` is written
  bool eof = false;          // peer finished sending
  bool paused = false;       // stopped reading at kMaxBuffered
  bool dead = false;         // close at the end of this event
};

TierServer::TierServer(TierConfig config) : config_(std::move(config)) {
  config_.validate();
  for (const auto& [name, addr] : config_.tiers) {
    pools_[name] =
        std::make_unique<DownstreamPool>(name, addr, kDownstreamTimeoutNs, config_.wait_slice_ns);
  }
  const bool v6 = config_.listen.host.find(':') != std::string::npos;
  listen_fd_ = UniqueFd(common::check_syscall(
      "socket", ::socket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0)));
  const int one = 1;
  common::check_syscall("setsockopt(SO_REUSEADDR)",
                        ::setsockopt(listen_fd_.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one));
  sockaddr_storage ss{};
  socklen_t len = 0;
  if (v6) {
    auto* sa = reinterpret_cast<sockaddr_in6*>(&ss);
    sa->sin6_family = AF_INET6;
    sa->sin6_port = htons(config_.listen.port);
    ::inet_pton(AF_INET6, config_.listen.host.c_str(), &sa->sin6_addr);
    len = sizeof *sa;
  } else {
    auto* sa = reinterpret_cast<sockaddr_in*>(&ss);
    sa->sin_family = AF_INET;
    sa->sin_port = htons(config_.listen.port);
    ::inet_pton(AF_INET, config_.listen.host.c_str(), &sa->sin_addr);
    len = sizeof *sa;
  }
  const std::string where = config_.listen.host + " port " + std::to_string(config_.listen.port);
  common::check_syscall(("bind " + where).c_str(),
                        ::bind(listen_fd_.get(), reinterpret_cast<sockaddr*>(&ss), len));
  common::check_syscall(("listen " + where).c_str(), ::listen(listen_fd_.get(), 1024));
  len = sizeof ss;
  common::check_syscall("getsockname",
                        ::getsockname(listen_fd_.get(), reinterpret_cast<sockaddr*>(&ss), &len));
  port_ = ntohs(v6 ? reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port
                   : reinterpret_cast<sockaddr_in*>(&ss)->sin_port);

  epoll_fd_ = UniqueFd(common::check_syscall("epoll_create1", ::epoll_create1(EPOLL_CLOEXEC)));
  wake_fd_ = UniqueFd(common::check_syscall("eventfd", ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)));
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = kListenerId;
  common::check_syscall("epoll_ctl",
                        ::epoll_ctl(epoll_fd_.get(), EPOLL_CTL_ADD, listen_fd_.get(), &ev));
  ev.data.u64 = kWakeId;
  common::check_syscall("epoll_ctl",
                        ::epoll_ctl(epoll_fd_.get(), EPOLL_CTL_ADD, wake_fd_.get(), &ev));
}

TierServer::~TierServer() {
  stop();
}

void TierServer::start() {
  if (started_) return;
  started_ = true;
  io_thread_ = std::thread([this] { io_loop(); });
  async_thread_ = std::thread([this] { async_loop(); });
  for (int i = 0; i < config_.workers; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
}

void TierServer::stop() {
  if (stopping_.exchange(true)) return;
  const uint64_t one = 1;
  [[maybe_unused]] const ssize_t w = ::write(wake_fd_.get(), &one, sizeof one);
  {
    std::lock_guard lock(jobs_mu_);
    jobs_cv_.notify_all();
  }
  {
    std::lock_guard lock(async_mu_);
    async_cv_.notify_all();
  }
  if (io_thread_.joinable()) io_thread_.join();
  for (auto& t : workers_) t.join();
  workers_.clear();
  if (async_thread_.joinable()) async_thread_.join();
  conns_.clear();
}

TierCounters TierServer::counters() const {
  TierCounters c;
  c.requests = requests_.load();
  c.bad_requests = bad_requests_.load();
  c.not_found = not_found_.load();
  c.downstream_failures = downstream_failures_.load();
  c.async_dropped = async_dropped_.load();
  c.connections = connections_.load();
  c.accept_errors = accept_errors_.load();
  return c;
}

DownstreamCounters TierServer::downstream_counters(const std::string& tier) const {
  const auto it = pools_.find(tier);
  return it == pools_.end() ? DownstreamCounters{} : it->second->counters();
}

void TierServer::io_loop() {
  epoll_event events[128];
  while (!stopping_.load(std::memory_order_relaxed)) {
    const int n = ::epoll_wait(epoll_fd_.get(), events, 128, -1);
    if (n < 0) {
      if (errno == EINTR) continue;
      break;  // cannot happen with a valid epoll fd; leave rather than spin
    }
    for (int i = 0; i < n; ++i) {
      const uint64_t id = events[i].data.u64;
      if (id == kListenerId) {
        accept_all();
      } else if (id == kWakeId) {
        uint64_t value = 0;
        [[maybe_unused]] const ssize_t r = ::read(wake_fd_.get(), &value, sizeof value);
        drain_done();
      } else {
        on_event(id, events[i].events);
      }
    }
  }
}

void TierServer::accept_all() {
  while (true) {
    UniqueFd fd(::accept4(listen_fd_.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
    if (!fd.valid()) {
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
        // Out of descriptors: the listener would stay readable and spin the
        // loop, so stop watching it until a connection closes.
        accept_errors_.fetch_add(1, std::memory_order_relaxed);
        set_listening(false);
      }
      return;  // EAGAIN (drained) or a per-connection error (ECONNABORTED...)
    }
    if (conns_.size() >= static_cast<size_t>(config_.max_connections)) continue;
    // A split response needs Nagle's algorithm (TierConfig::split_response_bytes).
    const int one = 1;
    if (config_.split_response_bytes == 0) {
      ::setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    }
    const uint64_t id = next_conn_id_++;
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET;
    ev.data.u64 = id;
    if (::epoll_ctl(epoll_fd_.get(), EPOLL_CTL_ADD, fd.get(), &ev) != 0) continue;
    auto conn = std::make_unique<Connection>();
    conn->id = id;
    conn->fd = std::move(fd);
    conns_.emplace(id, std::move(conn));
    connections_.fetch_add(1, std::memory_order_relaxed);
  }
}

void TierServer::on_event(uint64_t id, uint32_t events) {
  const auto it = conns_.find(id);
  if (it == conns_.end()) return;
  Connection& c = *it->second;
  if (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) read_some(c);
  if (!c.dead && (events & EPOLLOUT)) flush(c);
  if (!c.dead) try_dispatch(c);
  if (c.dead) close_connection(id);
}

void TierServer::read_some(Connection& c) {
  char chunk[64 * 1024];
  while (c.in.size() < kMaxBuffered && !c.eof) {
    const ssize_t r = ::recv(c.fd.get(), chunk, sizeof chunk, 0);
    if (r > 0) {
      c.in.append(chunk, static_cast<size_t>(r));
    } else if (r == 0) {
      c.eof = true;
    } else if (errno == EINTR) {
      continue;
    } else {
      if (errno != EAGAIN) c.dead = true;
      break;
    }
  }
  c.paused = c.in.size() >= kMaxBuffered;
}

void TierServer::try_dispatch(Connection& c) {
  // One request at a time per connection; pipelined ones wait their turn.
  while (!c.dead && !c.busy && !c.close_after && c.out_off == c.out.size()) {
    const loadgen::RequestParse parsed = loadgen::parse_http_request(c.in);
    if (parsed.status == loadgen::ParseStatus::kIncomplete) {
      if (c.paused) {
        read_some(c);
        if (!c.paused) continue;
      }
      if (c.eof) c.dead = true;  // peer is done and no full request is left
      return;
    }
    if (parsed.status == loadgen::ParseStatus::kBad) {
      requests_.fetch_add(1, std::memory_order_relaxed);
      bad_requests_.fetch_add(1, std::memory_order_relaxed);
      c.out = error_response(parsed.error_status);
      c.out_off = 0;
      c.close_after = true;
      flush(c);
      return;
    }
    const loadgen::HttpRequestHead& head = parsed.head;
    Job job{c.id, config_.find(head.path), std::string(head.path), head.keep_alive && !c.eof,
            monotonic_ns()};
    c.in.erase(0, head.consumed);
    c.busy = true;
    {
      std::lock_guard lock(jobs_mu_);
      jobs_.push_back(std::move(job));
    }
    jobs_cv_.notify_one();
    if (c.paused) read_some(c);
  }
}

void TierServer::flush(Connection& c) {
  while (c.out_off < c.out.size()) {
    const ssize_t w =
        ::send(c.fd.get(), c.out.data() + c.out_off, c.out.size() - c.out_off, MSG_NOSIGNAL);
    if (w < 0) {
      if (errno == EINTR) continue;
      if (errno != EAGAIN) c.dead = true;
      return;  // EPOLLOUT (edge) brings us back
    }
    c.out_off += static_cast<size_t>(w);
  }
  c.out.clear();
  c.out_off = 0;
  if (c.close_after) c.dead = true;
}

void TierServer::close_connection(uint64_t id) {
  conns_.erase(id);  // close() drops it from epoll
  if (!listening_) set_listening(true);
}

void TierServer::set_listening(bool on) {
  epoll_event ev{};
  ev.events = on ? static_cast<uint32_t>(EPOLLIN) : 0u;
  ev.data.u64 = kListenerId;
  if (::epoll_ctl(epoll_fd_.get(), EPOLL_CTL_MOD, listen_fd_.get(), &ev) == 0) listening_ = on;
}

void TierServer::drain_done() {
  std::vector<Done> done;
  {
    std::lock_guard lock(done_mu_);
    done.swap(done_);
  }
  for (auto& d : done) {
    const auto it = conns_.find(d.conn_id);
    if (it == conns_.end()) continue;  // client went away meanwhile
    Connection& c = *it->second;
    c.out.append(d.response);
    if (d.partial) {
      flush(c);
      if (c.dead) close_connection(d.conn_id);
      continue;
    }
    c.busy = false;
    c.close_after = c.close_after || d.close_after;
    flush(c);
    if (!c.dead) try_dispatch(c);
    if (c.dead) close_connection(d.conn_id);
  }
}

}  // namespace nabla::tier
