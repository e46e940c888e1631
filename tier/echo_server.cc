#include "nabla/tier/echo_server.hh"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <cerrno>
#include <deque>
#include <map>
#include <string>
#include <system_error>

#include "nabla/common/clock.hh"
#include "nabla/loadgen/protocol.hh"

namespace nabla::tier {

namespace {

[[noreturn]] void fail(const char* call) {
  throw std::system_error(errno, std::system_category(), call);
}

struct Conn {
  common::FileDescriptor fd;
  std::string in;
  std::string out;
  uint64_t frames = 0;
};

struct Reply {
  int64_t due_ns;
  uint64_t conn;
  std::string bytes;
};

constexpr uint64_t kListenTag = 0;
constexpr uint64_t kStopTag = 1;
constexpr uint64_t kTimerTag = 2;

}  // namespace

EchoServer::EchoServer(EchoServerOptions options)
    : options_(options),
      listen_(::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0)),
      stop_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {
  if (!listen_) fail("socket");
  if (!stop_) fail("eventfd");
  int one = 1;
  ::setsockopt(listen_.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(listen_.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) fail("bind");
  if (::listen(listen_.get(), 128) != 0) fail("listen");
  socklen_t len = sizeof addr;
  if (::getsockname(listen_.get(), reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    fail("getsockname");
  }
  port_ = ntohs(addr.sin_port);
  thread_ = std::thread([this] { loop(); });
}

EchoServer::~EchoServer() {
  uint64_t one = 1;
  [[maybe_unused]] ssize_t r = ::write(stop_.get(), &one, sizeof one);
  if (thread_.joinable()) thread_.join();
}

namespace {

// The server thread's state: its epoll set and timer, the open connections
// and the replies waiting for their due time. One instance per loop() call.
class EchoLoop {
 public:
  EchoLoop(const EchoServerOptions& options, int listen_fd, int stop_fd,
           std::atomic<uint64_t>& frames, std::atomic<uint64_t>& accepted)
      : options_(options),
        listen_fd_(listen_fd),
        stop_fd_(stop_fd),
        frames_(frames),
        accepted_(accepted),
        ep_(::epoll_create1(EPOLL_CLOEXEC)),
        timer_(::timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC)) {}

  // Serves until the stop eventfd is signalled. Without an epoll set or a
  // timer it returns at once: the test then sees connect/timeouts errors.
  void run() {
    if (!ep_ || !timer_) return;
    add(listen_fd_, kListenTag, EPOLLIN);
    add(stop_fd_, kStopTag, EPOLLIN);
    add(timer_.get(), kTimerTag, EPOLLIN);
    epoll_event events[64];
    for (;;) {
      int n = ::epoll_wait(ep_.get(), events, 64, 100);
      for (int k = 0; k < n; ++k) {
        const uint64_t tag = events[k].data.u64;
        if (tag == kStopTag) return;
        if (tag == kTimerTag) {
          uint64_t x;
          [[maybe_unused]] ssize_t r = ::read(timer_.get(), &x, sizeof x);
          send_due();
        } else if (tag == kListenTag) {
          accept_all();
        } else {
          serve(tag, events[k].events);
        }
      }
    }
  }

 private:
  void add(int fd, uint64_t tag, uint32_t events) {
    epoll_event ev{};
    ev.events = events;
    ev.data.u64 = tag;
    ::epoll_ctl(ep_.get(), EPOLL_CTL_ADD, fd, &ev);
  }

  void accept_all() {
    for (;;) {
      int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) break;
      int one = 1;
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      uint64_t id = next_conn_++;
      conns_[id].fd = common::FileDescriptor(fd);
      add(fd, id, EPOLLIN);
      ++accepted_;
    }
  }

  // Sends what the socket takes and watches for EPOLLOUT while bytes remain.
  void flush(uint64_t id) {
    auto it = conns_.find(id);
    if (it == conns_.end()) return;
    Conn& c = it->second;
    while (!c.out.empty()) {
      ssize_t n = ::send(c.fd.get(), c.out.data(), c.out.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n <= 0) break;
      c.out.erase(0, static_cast<size_t>(n));
    }
    epoll_event ev{};
    ev.events = EPOLLIN | (c.out.empty() ? 0u : EPOLLOUT);
    ev.data.u64 = id;
    ::epoll_ctl(ep_.get(), EPOLL_CTL_MOD, c.fd.get(), &ev);
  }

  // Moves every reply whose time has come to its connection, then arms the
  // timer for the next one (or disarms it).
  void send_due() {
    int64_t now = common::monotonic_ns();
    while (!replies_.empty() && replies_.front().due_ns <= now) {
      Reply r = std::move(replies_.front());
      replies_.pop_front();
      auto it = conns_.find(r.conn);
      if (it == conns_.end()) continue;
      it->second.out += r.bytes;
      flush(r.conn);
      if (options_.close_after > 0 && it->second.frames >= options_.close_after &&
          it->second.out.empty()) {
        conns_.erase(it);
      }
    }
    itimerspec its{};
    if (!replies_.empty()) {
      its.it_value.tv_sec = replies_.front().due_ns / 1'000'000'000;
      its.it_value.tv_nsec = replies_.front().due_ns % 1'000'000'000;
    }
    ::timerfd_settime(timer_.get(), TFD_TIMER_ABSTIME, &its, nullptr);
  }

  void serve(uint64_t id, uint32_t events) {
    auto it = conns_.find(id);
    if (it == conns_.end()) return;
    Conn& c = it->second;
    if (events & EPOLLOUT) flush(id);
    if (!(events & (EPOLLIN | EPOLLHUP | EPOLLERR))) return;
    bool closed = receive_all(c);
    if (queue_replies(id, c)) closed = true;
    if (closed) {
      conns_.erase(it);
      return;
    }
    send_due();
  }

  // Reads until the socket would block; true when the peer closed or the
  // socket failed.
  static bool receive_all(Conn& c) {
    char buf[16384];
    for (;;) {
      ssize_t r = ::recv(c.fd.get(), buf, sizeof buf, MSG_DONTWAIT);
      if (r > 0) {
        c.in.append(buf, static_cast<size_t>(r));
        continue;
      }
      return r == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
    }
  }

  // Queues a delayed reply for every complete frame received; true when a
  // frame was malformed (the connection is then closed).
  bool queue_replies(uint64_t id, Conn& c) {
    bool bad = false;
    size_t pos = 0;
    int64_t now = common::monotonic_ns();
    for (;;) {
      loadgen::EchoFrame f = loadgen::parse_echo_frame(std::string_view(c.in).substr(pos));
      if (f.status == loadgen::ParseStatus::kBad) bad = true;
      if (f.status != loadgen::ParseStatus::kComplete) break;
      pos += f.consumed;
      ++c.frames;
      ++frames_;
      Reply reply{now + options_.delay_ns, id, {}};
      loadgen::append_echo_frame(reply.bytes, f.id, f.payload, options_.delay_ns);
      replies_.push_back(std::move(reply));
    }
    c.in.erase(0, pos);
    return bad;
  }

  const EchoServerOptions& options_;
  int listen_fd_;
  int stop_fd_;
  std::atomic<uint64_t>& frames_;
  std::atomic<uint64_t>& accepted_;
  common::FileDescriptor ep_;
  common::FileDescriptor timer_;
  std::map<uint64_t, Conn> conns_;
  std::deque<Reply> replies_;  // fixed delay: due times are in arrival order
  uint64_t next_conn_ = 3;
};

}  // namespace

void EchoServer::loop() {
  EchoLoop(options_, listen_.get(), stop_.get(), frames_, accepted_).run();
}

}  // namespace nabla::tier
