// The engine over HTTP/2 in cleartext (h2c, prior knowledge) against an
// HTTP/2 server in this test, built on libnghttp2's server session: /slow
// answers after 100 ms, /fast at once, so with many streams on one
// connection the answers come back out of order. Every request must be
// matched to its own stream: no /slow sample is shorter than 100 ms, and a
// /fast one does not wait for the /slow ones sent before it. The counts
// equal what the server answered, request for request.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <nghttp2/nghttp2.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "loopback.hh"
#include "nabla/common/clock.hh"
#include "nabla/loadgen/engine.hh"
#include "rx_stamping.hh"

namespace nabla::loadgen {
namespace {

constexpr int64_t kSlowNs = 100'000'000;

// One HTTP/2 connection served on its own thread until the peer closes or
// the server stops: requests end at END_STREAM and are answered ":status
// 200" (no body) when due.
class H2Connection {
 public:
  H2Connection(int fd, std::atomic<bool>& stop, std::map<std::string, int>& answered,
               std::mutex& mutex)
      : fd_(fd), stop_(stop), answered_(answered), mutex_(mutex) {
    nghttp2_session_callbacks* cb = nullptr;
    nghttp2_session_callbacks_new(&cb);
    nghttp2_session_callbacks_set_on_header_callback(cb, &H2Connection::on_header);
    nghttp2_session_callbacks_set_on_frame_recv_callback(cb, &H2Connection::on_frame);
    nghttp2_session_server_new(&session_, cb, this);
    nghttp2_session_callbacks_del(cb);
    nghttp2_settings_entry settings[] = {{NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, 100}};
    nghttp2_submit_settings(session_, NGHTTP2_FLAG_NONE, settings, 1);
  }
  ~H2Connection() {
    nghttp2_session_del(session_);
    ::close(fd_);
  }
  H2Connection(const H2Connection&) = delete;
  H2Connection& operator=(const H2Connection&) = delete;

  void serve() {
    char buf[16384];
    while (!stop_.load()) {
      answer_due();
      if (!send_all()) return;
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 1) < 0) return;
      if (p.revents & POLLIN) {
        const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
        if (n <= 0) return;
        if (nghttp2_session_mem_recv(session_, reinterpret_cast<const uint8_t*>(buf),
                                     static_cast<size_t>(n)) < 0) {
          return;
        }
      }
    }
  }

 private:
  struct Pending {
    int32_t stream_id;
    int64_t due_ns;
    std::string path;
  };

  static int on_header(nghttp2_session*, const nghttp2_frame* frame, const uint8_t* name,
                       size_t namelen, const uint8_t* value, size_t valuelen, uint8_t, void* user) {
    auto* self = static_cast<H2Connection*>(user);
    if (std::string(reinterpret_cast<const char*>(name), namelen) == ":path") {
      self->paths_[frame->hd.stream_id] =
          std::string(reinterpret_cast<const char*>(value), valuelen);
    }
    return 0;
  }

  static int on_frame(nghttp2_session*, const nghttp2_frame* frame, void* user) {
    auto* self = static_cast<H2Connection*>(user);
    const bool request_end =
        (frame->hd.type == NGHTTP2_HEADERS || frame->hd.type == NGHTTP2_DATA) &&
        (frame->hd.flags & NGHTTP2_FLAG_END_STREAM);
    if (request_end) {
      const std::string path = self->paths_[frame->hd.stream_id];
      const int64_t delay = path == "/slow" ? kSlowNs : 0;
      self->pending_.push_back({frame->hd.stream_id, common::monotonic_ns() + delay, path});
    }
    return 0;
  }

  void answer_due() {
    const int64_t now = common::monotonic_ns();
    for (auto it = pending_.begin(); it != pending_.end();) {
      if (it->due_ns > now) {
        ++it;
        continue;
      }
      const nghttp2_nv status[] = {{reinterpret_cast<uint8_t*>(const_cast<char*>(":status")),
                                    reinterpret_cast<uint8_t*>(const_cast<char*>("200")), 7, 3,
                                    NGHTTP2_NV_FLAG_NONE}};
      nghttp2_submit_response(session_, it->stream_id, status, 1, nullptr);
      {
        std::lock_guard lock(mutex_);
        ++answered_[it->path];
      }
      it = pending_.erase(it);
    }
  }

  bool send_all() {
    for (;;) {
      const uint8_t* data = nullptr;
      const ssize_t n = nghttp2_session_mem_send(session_, &data);
      if (n < 0) return false;
      if (n == 0) return true;
      if (::send(fd_, data, static_cast<size_t>(n), MSG_NOSIGNAL) != n) return false;
    }
  }

  int fd_;
  std::atomic<bool>& stop_;
  std::map<std::string, int>& answered_;
  std::mutex& mutex_;
  nghttp2_session* session_ = nullptr;
  std::map<int32_t, std::string> paths_;
  std::vector<Pending> pending_;
};

// Accepts connections on 127.0.0.1 and serves each on a thread of its own.
class H2Server {
 public:
  H2Server() {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    testing::bind_loopback(listen_fd_, a);
    ::listen(listen_fd_, 16);
    port_ = ntohs(a.sin_port);
    acceptor_ = std::thread([this] { accept_loop(); });
  }
  ~H2Server() {
    stop_.store(true);
    ::shutdown(listen_fd_, SHUT_RDWR);
    acceptor_.join();
    for (auto& t : served_) t.join();
    ::close(listen_fd_);
  }
  H2Server(const H2Server&) = delete;
  H2Server& operator=(const H2Server&) = delete;

  uint16_t port() const { return port_; }
  std::map<std::string, int> answered() {
    std::lock_guard lock(mutex_);
    return answered_;
  }

 private:
  void accept_loop() {
    while (!stop_.load()) {
      pollfd p{listen_fd_, POLLIN, 0};
      if (::poll(&p, 1, 10) <= 0) continue;
      const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) continue;
      served_.emplace_back([this, fd] {
        H2Connection c(fd, stop_, answered_, mutex_);
        c.serve();
      });
    }
  }

  int listen_fd_ = -1;
  uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  std::mutex mutex_;
  std::map<std::string, int> answered_;
  std::thread acceptor_;
  std::vector<std::thread> served_;
};

// 300 requests at 400/s, half /slow and half /fast, on 2 connections of
// 32 streams each.
EngineConfig slow_and_fast(uint16_t port) {
  EngineConfig c;
  c.host = "127.0.0.1";
  c.port = port;
  c.connections = 2;
  c.max_outstanding = 32;  // streams per connection
  c.protocol.kind = ProtocolSpec::Kind::kHttp2;
  c.protocol.urls = {{"/slow", 1.0}, {"/fast", 1.0}};
  c.protocol.host_header = "127.0.0.1";
  c.schedule.rate_per_s = 400;
  c.max_requests = 300;
  c.request_timeout_ns = 2'000'000'000;
  c.late_threshold_ns = 1'000'000;
  return c;
}

TEST(H2Engine, StreamsCompleteOutOfOrderEachTimedFromItsOwnIntendedSend) {
  H2Server server;
  const EngineConfig c = slow_and_fast(server.port());
  const EngineResult r = run_engine(c, common::monotonic_ns() + 20'000'000);
  EXPECT_EQ(r.errors.total(), 0u);
  EXPECT_EQ(r.sent, 300u);
  EXPECT_EQ(r.completed, 300u);
  ASSERT_EQ(r.type_names, (std::vector<std::string>{"/slow", "/fast"}));
  const auto answered = server.answered();
  ASSERT_EQ(r.by_type.size(), 2u);
  EXPECT_EQ(static_cast<int>(r.by_type[0].completed),
            answered.count("/slow") ? answered.at("/slow") : 0);
  EXPECT_EQ(static_cast<int>(r.by_type[1].completed),
            answered.count("/fast") ? answered.at("/fast") : 0);
  std::vector<int64_t> fast;
  for (const Sample& s : r.samples) {
    if (s.type == 0) {
      EXPECT_GE(in_flight_ns(s), kSlowNs);
    } else {
      fast.push_back(in_flight_ns(s));
    }
  }
  ASSERT_FALSE(fast.empty());
  // At 400/s about 40 /slow requests are open at any time: a /fast answer
  // that waited behind them (in order) would take 100 ms.
  std::nth_element(fast.begin(), fast.begin() + static_cast<long>(fast.size() / 2), fast.end());
  EXPECT_LT(fast[fast.size() / 2], kSlowNs / 2);
  EXPECT_EQ(r.setup.tls_handshakes, 0u);
}

// Over h2c the kernel's stamps time the streams too: a send stamp is that
// of the last byte drained with the request's frames, a receive stamp that
// of the read that closed the stream. Neither may make a request shorter
// than the server held it, nor put its send before it was due.
TEST(H2Engine, CleartextStreamsAreTimedByTheKernelsStamps) {
  const testing::RxStampingOn stamping;
  ASSERT_TRUE(stamping.on()) << "no software RX stamp on loopback within 10 s";
  H2Server server;
  EngineConfig c = slow_and_fast(server.port());
  c.software_rx_timestamps = true;
  const EngineResult r = run_engine(c, common::monotonic_ns() + 20'000'000);
  EXPECT_EQ(r.errors.total(), 0u);
  ASSERT_EQ(r.completed, 300u);
  size_t received = 0, sent = 0;
  for (const Sample& s : r.samples) {
    received += s.source == TimestampSource::kSoftware;
    sent += s.send_source == TimestampSource::kSoftware;
    // The realtime/monotonic offset is read once: 1 ms of slack.
    EXPECT_GT(s.lateness_ns, -1'000'000);
    EXPECT_LT(s.lateness_ns, s.latency_ns);
    // A send stamp matched from a later batch would cut a /slow request's
    // time in flight below the 100 ms the server held it.
    if (s.type == 0) {
      EXPECT_GE(in_flight_ns(s), kSlowNs - 1'000'000);
    }
  }
  // With RX stamping already on, every reply is stamped.
  EXPECT_EQ(received, r.samples.size());
  EXPECT_GE(sent + 5, r.samples.size());
}

TEST(H2Engine, NoServerIsAConnectErrorNamedInTheSetup) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);  // nothing listens on the port now
  EngineConfig c;
  c.host = "127.0.0.1";
  c.port = ntohs(a.sin_port);
  c.protocol.kind = ProtocolSpec::Kind::kHttp2;
  c.schedule.rate_per_s = 100;
  c.max_requests = 5;
  c.request_timeout_ns = 200'000'000;
  const EngineResult r = run_engine(c, common::monotonic_ns() + 10'000'000);
  EXPECT_EQ(r.completed, 0u);
  EXPECT_GT(r.errors.connect, 0u);
  EXPECT_NE(r.setup.first_error.find("Connection refused"), std::string::npos)
      << r.setup.first_error;
}

}  // namespace
}  // namespace nabla::loadgen
