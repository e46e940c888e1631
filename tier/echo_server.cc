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

void EchoServer::loop() {
  common::FileDescriptor ep(::epoll_create1(EPOLL_CLOEXEC));
  common::FileDescriptor timer(::timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC));
  if (!ep || !timer) return;  // the test then sees connect/timeouts errors
  auto add = [&](int fd, uint64_t tag, uint32_t events) {
    epoll_event ev{};
    ev.events = events;
    ev.data.u64 = tag;
    ::epoll_ctl(ep.get(), EPOLL_CTL_ADD, fd, &ev);
  };
  add(listen_.get(), kListenTag, EPOLLIN);
  add(stop_.get(), kStopTag, EPOLLIN);
  add(timer.get(), kTimerTag, EPOLLIN);
  std::map<uint64_t, Conn> conns;
  std::deque<Reply> replies;  // fixed delay: due times are in arrival order
  uint64_t next_conn = 3;
  auto flush = [&](uint64_t id) {
    auto it = conns.find(id);
    if (it == conns.end()) return;
    Conn& c = it->second;
    while (!c.out.empty()) {
      ssize_t n = ::send(c.fd.get(), c.out.data(), c.out.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n <= 0) break;
      c.out.erase(0, static_cast<size_t>(n));
    }
    epoll_event ev{};
    ev.events = EPOLLIN | (c.out.empty() ? 0u : EPOLLOUT);
    ev.data.u64 = id;
    ::epoll_ctl(ep.get(), EPOLL_CTL_MOD, c.fd.get(), &ev);
  };
  auto send_due = [&] {
    int64_t now = common::monotonic_ns();
    while (!replies.empty() && replies.front().due_ns <= now) {
      Reply r = std::move(replies.front());
      replies.pop_front();
      auto it = conns.find(r.conn);
      if (it == conns.end()) continue;
      it->second.out += r.bytes;
      flush(r.conn);
      if (options_.close_after > 0 && it->second.frames >= options_.close_after &&
          it->second.out.empty()) {
        conns.erase(it);
      }
    }
    itimerspec its{};
    if (!replies.empty()) {
      its.it_value.tv_sec = replies.front().due_ns / 1'000'000'000;
      its.it_value.tv_nsec = replies.front().due_ns % 1'000'000'000;
    }
    ::timerfd_settime(timer.get(), TFD_TIMER_ABSTIME, &its, nullptr);
  };
  epoll_event events[64];
  for (;;) {
    int n = ::epoll_wait(ep.get(), events, 64, 100);
    for (int k = 0; k < n; ++k) {
      uint64_t tag = events[k].data.u64;
      if (tag == kStopTag) return;
      if (tag == kTimerTag) {
        uint64_t x;
        [[maybe_unused]] ssize_t r = ::read(timer.get(), &x, sizeof x);
        send_due();
        continue;
      }
      if (tag == kListenTag) {
        for (;;) {
          int fd = ::accept4(listen_.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
          if (fd < 0) break;
          int one = 1;
          ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
          uint64_t id = next_conn++;
          conns[id].fd = common::FileDescriptor(fd);
          add(fd, id, EPOLLIN);
          ++accepted_;
        }
        continue;
      }
      auto it = conns.find(tag);
      if (it == conns.end()) continue;
      Conn& c = it->second;
      if (events[k].events & EPOLLOUT) flush(tag);
      if (!(events[k].events & (EPOLLIN | EPOLLHUP | EPOLLERR))) continue;
      char buf[16384];
      bool closed = false;
      for (;;) {
        ssize_t r = ::recv(c.fd.get(), buf, sizeof buf, MSG_DONTWAIT);
        if (r > 0) {
          c.in.append(buf, static_cast<size_t>(r));
          continue;
        }
        closed = r == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
        break;
      }
      size_t pos = 0;
      int64_t now = common::monotonic_ns();
      for (;;) {
        loadgen::EchoFrame f = loadgen::parse_echo_frame(std::string_view(c.in).substr(pos));
        if (f.status == loadgen::ParseStatus::kBad) closed = true;
        if (f.status != loadgen::ParseStatus::kComplete) break;
        pos += f.consumed;
        ++c.frames;
        ++frames_;
        Reply reply{now + options_.delay_ns, tag, {}};
        loadgen::append_echo_frame(reply.bytes, f.id, f.payload, options_.delay_ns);
        replies.push_back(std::move(reply));
      }
      c.in.erase(0, pos);
      if (closed) {
        conns.erase(it);
        continue;
      }
      send_due();
    }
  }
}

}  // namespace nabla::tier
