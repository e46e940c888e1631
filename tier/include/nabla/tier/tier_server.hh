#pragma once
// nabla-tier's server: one epoll I/O thread owns every client connection
// (accept, read, HTTP framing, write); a pool of worker threads shares one
// request queue (the M/G/n model tailbench uses) and runs each request: draw
// the service time, spin or sleep it, make the URL's downstream calls, build
// the response. Keep-alive connections carry one request at a time; pipelined
// requests wait in the connection's buffer, so responses keep their order.
//
// Response headers, as tailbench separates service and sojourn time:
//   X-Service-Time-Ns  a worker picked it up → response ready to write, minus
//                      the downstream waits (service time without queueing)
//   X-Queue-Ns         request fully read → a worker picked it up
// so sojourn inside the server = X-Queue-Ns + X-Service-Time-Ns + X-Downstream-Ns.
//   X-Downstream-Ns    time spent waiting on synchronous downstream calls
// A request whose synchronous downstream calls fail is answered 502.
// Malformed requests are answered 400 (or 413/431/501/505) and the
// connection is closed; the server keeps serving everybody else.
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "nabla/common/fd.hh"
#include "nabla/tier/downstream_pool.hh"
#include "nabla/tier/tier_config.hh"

namespace nabla::tier {

struct TierCounters {
  uint64_t requests = 0;             // answered, any status
  uint64_t bad_requests = 0;         // answered 4xx/5xx because of framing
  uint64_t not_found = 0;            // no URL spec
  uint64_t downstream_failures = 0;  // requests answered 502
  uint64_t async_dropped = 0;        // async calls dropped, queue full
  uint64_t connections = 0;          // accepted
  uint64_t accept_errors = 0;        // accept failed for lack of fds (listener paused meanwhile)
};

class TierServer {
 public:
  // Binds and listens (throws std::system_error naming the call, or
  // std::invalid_argument on a bad config). Port 0 picks a free port.
  explicit TierServer(TierConfig config);
  ~TierServer();  // stop() and join
  TierServer(const TierServer&) = delete;
  TierServer& operator=(const TierServer&) = delete;

  uint16_t port() const { return port_; }
  void start();  // spawns the I/O thread, workers and the async sender
  void stop();   // idempotent; returns once every thread has exited
  TierCounters counters() const;
  DownstreamCounters downstream_counters(const std::string& tier) const;

 private:
  struct Job {
    uint64_t conn_id;
    const UrlSpec* spec;  // nullptr: 404
    std::string path;
    bool keep_alive;
    int64_t read_done_ns;
  };
  struct Done {
    uint64_t conn_id;
    std::string response;
    bool close_after;
    bool partial = false;  // the first part of a split response: more follows
  };
  struct AsyncCall {
    DownstreamPool* pool;
    std::string path;
  };
  struct Connection;

  void io_loop();
  void worker_loop(int index);
  void async_loop();
  std::string handle(const Job& job, std::mt19937_64& rng);

  // I/O-thread-only helpers.
  void accept_all();
  void on_event(uint64_t id, uint32_t events);
  void read_some(Connection& c);
  void try_dispatch(Connection& c);
  void flush(Connection& c);
  void close_connection(uint64_t id);
  void set_listening(bool on);
  void drain_done();
  // Hands a worker's (part of a) response to the I/O thread and wakes it.
  void post(Done done);

  TierConfig config_;
  uint16_t port_ = 0;
  common::FileDescriptor listen_fd_;
  common::FileDescriptor epoll_fd_;
  common::FileDescriptor wake_fd_;  // eventfd: completions and stop
  std::map<std::string, std::unique_ptr<DownstreamPool>> pools_;

  std::map<uint64_t, std::unique_ptr<Connection>> conns_;  // I/O thread only
  uint64_t next_conn_id_ = 2;                              // 0 listener, 1 eventfd
  bool listening_ = true;                                  // listener armed in epoll

  std::mutex jobs_mu_;
  std::condition_variable jobs_cv_;
  std::deque<Job> jobs_;
  std::mutex done_mu_;
  std::vector<Done> done_;
  std::mutex async_mu_;
  std::condition_variable async_cv_;
  std::deque<AsyncCall> async_;

  std::atomic<bool> stopping_{false};
  bool started_ = false;
  std::thread io_thread_;
  std::thread async_thread_;
  std::vector<std::thread> workers_;

  std::atomic<uint64_t> requests_{0};
  std::atomic<uint64_t> bad_requests_{0};
  std::atomic<uint64_t> not_found_{0};
  std::atomic<uint64_t> downstream_failures_{0};
  std::atomic<uint64_t> async_dropped_{0};
  std::atomic<uint64_t> connections_{0};
  std::atomic<uint64_t> accept_errors_{0};
};

}  // namespace nabla::tier
