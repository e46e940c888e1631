#include "nabla/loadgen/engine.hh"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sched.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <system_error>
#include <thread>

#include "h2_session.hh"
#include "nabla/common/clock.hh"
#include "nabla/common/fd.hh"
#include "nabla/common/ip_address.hh"
#include "nabla/common/sched_slice.hh"
#include "nabla/loadgen/phc_clock.hh"
#include "tls_client.hh"

namespace nabla::loadgen {

void ErrorCounts::add(const ErrorCounts& o) {
  connect += o.connect;
  read += o.read;
  write += o.write;
  timeout += o.timeout;
  protocol += o.protocol;
  server += o.server;
  for (const auto& [code, n] : o.grpc_status) grpc_status[code] += n;
}

void ConnectionSetup::add(const ConnectionSetup& o) {
  tls_handshakes += o.tls_handshakes;
  tls_offered += o.tls_offered;
  tls_resumed += o.tls_resumed;
  tls_handshake.merge(o.tls_handshake);
  start_shift_ns = std::max(start_shift_ns, o.start_shift_ns);
  if (first_error.empty()) first_error = o.first_error;
  busy_poll_refused += o.busy_poll_refused;
  server_closes += o.server_closes;
  resent += o.resent;
}

void add(std::vector<TypeCounts>& into, const std::vector<TypeCounts>& more) {
  if (into.size() < more.size()) into.resize(more.size());
  for (size_t t = 0; t < more.size(); ++t) {
    into[t].completed += more[t].completed;
    into[t].server_errors += more[t].server_errors;
  }
}

double EngineResult::achieved_rate() const {
  if (completed < 2 || last_intended_ns <= first_intended_ns) return 0;
  return static_cast<double>(completed - 1) * 1e9 /
         static_cast<double>(last_intended_ns - first_intended_ns);
}

namespace {

constexpr int64_t kReconnectBackoffNs = 10'000'000;
// Sends of one request the server did not process (a close, a refused
// stream) before it counts as failed.
constexpr uint8_t kMaxSends = 4;
constexpr size_t kReadChunk = 64 * 1024;
// Samples reserved up front per thread, at most (48 bytes each: 192 MiB).
constexpr double kMaxReservedSamples = 4.0 * 1024 * 1024;

// Samples one thread will most likely record: its share of the rate over the
// duration (or its request bound), plus 5% and a page of slack. Reserving
// them before the first send keeps the vector from doubling mid-run: at
// 100k/s a doubling copies megabytes and faults in fresh pages, a 2-4 ms stall
// of the loop that showed up as a burst of late sends (lateness p999 ~3 ms).
size_t expected_samples(const ScheduleSpec& part, const EngineConfig& config,
                        uint64_t max_requests) {
  double n = kMaxReservedSamples;
  if (part.kind == ScheduleKind::kTrace) {
    n = static_cast<double>(part.trace_ns.size());
  } else if (config.duration_ns > 0) {
    n = part.rate_per_s * static_cast<double>(config.duration_ns) / 1e9;
  }
  if (max_requests > 0) n = std::min(n, static_cast<double>(max_requests));
  return static_cast<size_t>(std::min(kMaxReservedSamples, n * 1.05 + 4096));
}

// SCHED_FIFO at `priority` for the calling thread; 0 or the errno.
int make_realtime(int priority) {
  sched_param param{};
  param.sched_priority = priority;
  return ::pthread_setschedparam(::pthread_self(), SCHED_FIFO, &param);
}

std::runtime_error realtime_refused(int priority, int err) {
  return std::runtime_error("SCHED_FIFO priority " + std::to_string(priority) +
                            " refused for the load threads: " + std::strerror(err) +
                            (err == EPERM ? " (needs root or CAP_SYS_NICE)" : ""));
}

struct Outstanding {
  int64_t intended_ns;
  int64_t lateness_ns;
  int64_t timer_lateness_ns;  // noticed - intended: the client's own part of lateness_ns
  uint64_t id;
  uint32_t type;
  uint32_t end_key;           // OPT_ID byte offset of the request's last byte
  bool key_pending = false;   // HTTP/2: end_key is set once the session drained its frames
  int64_t tx_ns = INT64_MIN;  // kernel TX stamp (monotonic) once matched
  bool tx_hardware = false;   // tx_ns came from the NIC
  uint8_t sends = 1;          // sends of this request so far (send_again)
};

struct Connection {
  common::FileDescriptor fd;
  bool connected = false;
  int64_t retry_at_ns = 0;  // when closed: earliest reopen
  std::string out;          // bytes not yet accepted by send()
  std::string in;           // bytes received, not yet framed
  std::deque<Outstanding> outstanding;
  uint32_t generation = 0;
  uint32_t tx_bytes = 0;    // bytes queued since SO_TIMESTAMPING was enabled (wraps like the key)
  bool timestamps = false;  // in epoll data: stale events of a closed socket are ignored
  bool writing = false;     // EPOLLOUT is in the epoll set (changed only when needed)
  bool dirty = false;       // requests encoded in this dispatch pass, not yet flushed
  // TLS and HTTP/2 (engine.hh): the TLS stream once TCP is connected, and
  // the HTTP/2 session once the connection is ready for requests.
  std::unique_ptr<detail::TlsStream> tls;
  std::unique_ptr<detail::H2Session> h2;
  bool handshaking = false;      // TCP connected, TLS handshake under way
  int64_t tcp_connected_ns = 0;  // when the handshake began
  uint64_t answered = 0;         // replies framed on it (samples and error replies)
};

struct ThreadResult {
  std::vector<Sample> samples;
  std::vector<int64_t> intended_ns;  // with record_intended
  analysis::LatencyHistogram latency;
  analysis::LatencyHistogram lateness;
  analysis::LatencyHistogram timer_lateness;
  analysis::LatencyHistogram slot_wait;
  SendTimer timer;
  uint64_t scheduled = 0, sent = 0, completed = 0, late = 0, slot_late = 0, reconnects = 0;
  uint64_t timestamp_fallbacks = 0;
  ConnectionSetup setup;
  ErrorCounts errors;
  std::vector<TypeCounts> by_type;
  int64_t first_intended_ns = INT64_MAX, last_intended_ns = INT64_MIN;
  int cpu = -1;  // sched_getcpu() at the end of the run
};

// Where the load threads wait for each other's connection setup before the
// schedule starts: each arrives with the time its connections were ready,
// and all leave with the latest one.
class StartGate {
 public:
  explicit StartGate(size_t threads) : waiting_(threads) {}
  int64_t arrive_and_wait(int64_t ready_ns) {
    std::unique_lock lock(mutex_);
    latest_ns_ = std::max(latest_ns_, ready_ns);
    if (--waiting_ == 0) {
      all_.notify_all();
    } else {
      all_.wait(lock, [&] { return waiting_ == 0; });
    }
    return latest_ns_;
  }

 private:
  std::mutex mutex_;
  std::condition_variable all_;
  size_t waiting_;
  int64_t latest_ns_ = INT64_MIN;
};

// The CPUs this process may run on, as "0-1,3" for error messages.
std::string describe_cpu_set(const cpu_set_t& set) {
  std::string out;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (!CPU_ISSET(cpu, &set)) continue;
    int last = cpu;
    while (last + 1 < CPU_SETSIZE && CPU_ISSET(last + 1, &set)) ++last;
    if (!out.empty()) out += ',';
    out += std::to_string(cpu);
    if (last > cpu) out += '-' + std::to_string(last);
    cpu = last;
  }
  return out;
}

}  // namespace

void validate_cpus(const std::vector<int>& cpus) {
  if (cpus.empty()) return;
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (::sched_getaffinity(0, sizeof allowed, &allowed) != 0) {
    throw std::system_error(errno, std::system_category(), "sched_getaffinity");
  }
  for (int cpu : cpus) {
    if (cpu < 0 || cpu >= CPU_SETSIZE || !CPU_ISSET(cpu, &allowed)) {
      throw std::invalid_argument(
          "engine: CPU " + std::to_string(cpu) +
          " is not one this process may run on (allowed: " + describe_cpu_set(allowed) + ")");
    }
  }
}

namespace {

// Pins the calling thread to one CPU; 0 or the error number.
int pin_to(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return ::pthread_setaffinity_np(::pthread_self(), sizeof set, &set);
}

class Worker {
 public:
  Worker(const EngineConfig& config, ScheduleSpec schedule, int64_t start_ns, uint64_t seed,
         int connections, uint64_t max_requests)
      : config_(config),
        reserved_(config.record_samples ? expected_samples(schedule, config, max_requests) : 0),
        schedule_spec_(schedule),
        schedule_seed_(seed),
        start_ns_(start_ns),
        schedule_(std::move(schedule), start_ns, seed),
        rng_(seed ^ 0x9e3779b97f4a7c15ULL),
        codec_(is_http2(config.protocol) ? nullptr : make_codec(config.protocol)),
        conns_(static_cast<size_t>(connections)),
        max_requests_(max_requests),
        end_ns_(config.duration_ns > 0 ? start_ns + config.duration_ns : INT64_MAX),
        epoll_(::epoll_create1(EPOLL_CLOEXEC)),
        timer_(::timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC)),
        wakeups_(config.lateness) {
    if (!epoll_) throw std::system_error(errno, std::system_category(), "epoll_create1");
    if (!timer_) throw std::system_error(errno, std::system_category(), "timerfd_create");
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = kTimerTag;
    if (::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, timer_.get(), &ev) != 0) {
      throw std::system_error(errno, std::system_category(), "epoll_ctl(timerfd)");
    }
    const auto address = common::IpAddress::parse(config.host);
    if (!address) {
      throw std::invalid_argument("engine: host must be an IPv4 or IPv6 literal: " + config.host);
    }
    addr_len_ = common::to_sockaddr({*address, config.port}, addr_);
    result_.samples.reserve(reserved_);
    if (is_http2(config.protocol)) {
      h2_requests_ = std::make_unique<detail::H2Requests>(config.protocol);
    }
    if (config.tls.enabled) {
      tls_ = std::make_unique<detail::TlsContext>(config.tls, h2_requests_ ? "h2" : "http/1.1");
    }
    // Kernel stamps are matched to requests by byte offset: not through TLS
    // records. Over h2c a request's offset is the last byte its session
    // drained with it, and a receive stamp ends every stream its read closed.
    kernel_stamps_ = config.software_rx_timestamps && !tls_;
    if (kernel_stamps_) offset_ns_ = clock_offset_ns();
    if (kernel_stamps_ && config.phc_index >= 0) {
      phc_ = std::make_unique<PhcClock>(config.phc_index);
      refresh_phc(common::monotonic_ns());
    }
  }

  // The threads' common gate before the schedule starts (TLS and HTTP/2
  // connections are set up first) and the run's start_ns.
  void set_gate(StartGate* gate, int64_t run_start_ns) {
    gate_ = gate;
    run_start_ns_ = run_start_ns;
  }

  // Arrives at the gate (once): waits for every thread's connections, then
  // starts the schedule later by the shift their setup took past the run's
  // start. Also called, with INT64_MIN, for a thread that failed before it.
  void release_gate(int64_t ready_ns) {
    if (gate_ == nullptr || arrived_) return;
    arrived_ = true;
    const int64_t latest = gate_->arrive_and_wait(ready_ns);
    if (latest == INT64_MIN) return;
    const int64_t shift = latest + kSetupMarginNs - run_start_ns_;
    if (shift <= 0) return;
    schedule_ = Schedule(schedule_spec_, start_ns_ + shift, schedule_seed_);
    if (end_ns_ != INT64_MAX) end_ns_ += shift;
    result_.setup.start_shift_ns = shift;
  }

  ThreadResult run() {
    const int64_t run_start_ns = common::monotonic_ns();
    if (gate_ != nullptr) set_up_connections();
    if (!config_.spin_ns) probe_wakeups_before_start();
    int64_t now = common::monotonic_ns();
    if (gate_ == nullptr) {
      for (size_t i = 0; i < conns_.size(); ++i) open(i, now);
    }
    int64_t drain_deadline = INT64_MAX;
    std::vector<epoll_event> events(conns_.size() + 1);
    for (;;) {
      if (config_.stop != nullptr && config_.stop->load(std::memory_order_relaxed)) break;
      now = common::monotonic_ns();
      if (phc_ && now >= phc_refresh_ns_) refresh_phc(now);
      generate(now);
      dispatch(now);
      check_timeouts(now);
      if (sending_done_) {
        // After the last intended send, stragglers (queued or outstanding)
        // get one request timeout, then count as timeouts.
        if (drain_deadline == INT64_MAX) drain_deadline = now + config_.request_timeout_ns;
        if ((backlog_.empty() && idle()) || now >= drain_deadline) break;
      }
      const int timeout_ms = next_wait_ms(now);
      const int64_t wait_start_ns = common::monotonic_ns();
      int n =
          ::epoll_wait(epoll_.get(), events.data(), static_cast<int>(events.size()), timeout_ms);
      if (n < 0 && errno != EINTR) {
        throw std::system_error(errno, std::system_category(), "epoll_wait");
      }
      const int64_t awake_ns = common::monotonic_ns();
      if (timeout_ms == 0 && n <= 0) count_poll(awake_ns - wait_start_ns);
      for (int i = 0; i < n; ++i) {
        const auto& ev = events[static_cast<size_t>(i)];
        if (ev.data.u64 == kTimerTag && timeout_ms != 0) record_wakeup(wait_start_ns, awake_ns);
        handle(ev);
        // A connection's read can frame hundreds of replies (a 64 KiB
        // read-ahead over TLS, many streams over HTTP/2): sends that fell
        // due meanwhile leave before the next connection's.
        if (i + 1 < n) {
          now = common::monotonic_ns();
          generate(now);
          dispatch(now);
        }
      }
    }
    // Whatever is still outstanding or queued after the drain never completed.
    for (auto& c : conns_) result_.errors.timeout += c.outstanding.size();
    result_.errors.timeout += backlog_.size();
    result_.cpu = ::sched_getcpu();
    report_timer(common::monotonic_ns() - run_start_ns);
    return std::move(result_);
  }

 private:
  static constexpr uint64_t kTimerTag = UINT64_MAX;
  // The schedule starts at least this long after the last connection of any
  // thread was ready.
  static constexpr int64_t kSetupMarginNs = 1'000'000;

  // Opens every connection and steps its TCP connect and TLS handshake until
  // each is ready or has failed (a failed one is retried by the run, as
  // usual), for at most one request timeout; then the gate.
  void set_up_connections() {
    int64_t now = common::monotonic_ns();
    for (size_t i = 0; i < conns_.size(); ++i) open(i, now);
    const int64_t deadline = now + config_.request_timeout_ns;
    std::vector<epoll_event> events(conns_.size() + 1);
    auto settled = [&] {
      return std::all_of(conns_.begin(), conns_.end(),
                         [](const Connection& c) { return c.connected || !c.fd; });
    };
    while (now < deadline && !settled()) {
      if (config_.stop != nullptr && config_.stop->load(std::memory_order_relaxed)) break;
      const int n = ::epoll_wait(epoll_.get(), events.data(), static_cast<int>(events.size()), 10);
      if (n < 0 && errno != EINTR) {
        throw std::system_error(errno, std::system_category(), "epoll_wait");
      }
      for (int i = 0; i < n; ++i) {
        if (events[static_cast<size_t>(i)].data.u64 != kTimerTag) {
          handle(events[static_cast<size_t>(i)]);
        }
      }
      now = common::monotonic_ns();
    }
    release_gate(now);
  }

  void note_error(std::string what) {
    if (result_.setup.first_error.empty()) result_.setup.first_error = std::move(what);
  }

  uint64_t tag(size_t i) const { return (uint64_t{conns_[i].generation} << 32) | i; }

  // ---- send timing (docs/timing.md)
  static constexpr int64_t kPollWindowNs = 1'000'000;
  static constexpr int kProbeWakeups = 24;
  static constexpr int64_t kProbePeriodNs = 250'000;

  // The first lead: real sleeps of this thread in the time left before its
  // first intended send (none when the run starts at once).
  void probe_wakeups_before_start() {
    const auto first = schedule_.peek();
    if (!first) return;
    for (int i = 0; i < kProbeWakeups; ++i) {
      if (common::monotonic_ns() + 2 * kProbePeriodNs > *first) break;
      common::probe_wakeup_lateness(wakeups_, 1, kProbePeriodNs);
    }
  }

  int64_t lead_ns() const { return config_.spin_ns ? *config_.spin_ns : wakeups_.lead_ns(); }

  bool may_poll(int64_t now) {
    if (now - poll_window_start_ns_ >= kPollWindowNs) {
      poll_window_start_ns_ = now;
      window_polled_ns_ = 0;
    }
    return static_cast<double>(window_polled_ns_) <
           config_.poll_budget * static_cast<double>(kPollWindowNs);
  }

  void count_poll(int64_t ns) {
    polled_ns_ += ns;
    window_polled_ns_ += ns;
  }

  // A timer expiry after a blocking wait that began before the armed time is
  // one wake-up lateness sample.
  void record_wakeup(int64_t wait_start_ns, int64_t awake_ns) {
    if (armed_ns_ > 0 && wait_start_ns < armed_ns_) wakeups_.record(awake_ns - armed_ns_);
  }

  void arm_timer(int64_t target_ns) {
    if (target_ns == armed_ns_) return;
    itimerspec its{};
    its.it_value.tv_sec = target_ns / 1'000'000'000;
    its.it_value.tv_nsec = target_ns % 1'000'000'000;
    ::timerfd_settime(timer_.get(), TFD_TIMER_ABSTIME, &its, nullptr);
    armed_ns_ = target_ns;
  }

  void report_timer(int64_t run_ns) {
    const auto w = wakeups_.summary();
    SendTimer& t = result_.timer;
    t.self_calibrated = !config_.spin_ns.has_value();
    t.lead_ns = lead_ns();
    t.wakeup_p50_ns = w.p50_ns;
    t.wakeup_p99_ns = w.p99_ns;
    t.wakeups = w.recorded;
    t.polled_ns = polled_ns_;
    t.thread_run_ns = run_ns;
  }

  bool idle() const {
    return std::all_of(conns_.begin(), conns_.end(),
                       [](const Connection& c) { return c.outstanding.empty(); });
  }

  void generate(int64_t now) {
    while (!sending_done_) {
      auto t = schedule_.peek();
      if (!t || *t >= end_ns_ || (max_requests_ > 0 && result_.scheduled >= max_requests_)) {
        sending_done_ = true;
        break;
      }
      if (*t > now) break;
      schedule_.next();
      backlog_.push_back({*t, now});
      const int64_t timer_lateness = now - *t;
      result_.timer_lateness.record(std::max<int64_t>(timer_lateness, 0));
      if (timer_lateness > config_.late_threshold_ns) ++result_.late;
      ++result_.scheduled;
      if (config_.record_intended) result_.intended_ns.push_back(*t);
      result_.first_intended_ns = std::min(result_.first_intended_ns, *t);
      result_.last_intended_ns = std::max(result_.last_intended_ns, *t);
    }
  }

  // Drains the backlog (oldest first) onto the least-loaded open connection.
  void dispatch(int64_t now) {
    while (!backlog_.empty()) {
      Connection* best = nullptr;
      size_t best_index = 0;
      for (size_t i = 0; i < conns_.size(); ++i) {
        auto& c = conns_[i];
        if (!c.fd) {
          if (now >= c.retry_at_ns) open(i, now);
          continue;
        }
        if (!c.connected) continue;
        if (c.outstanding.size() >= static_cast<size_t>(config_.max_outstanding)) continue;
        if (c.h2 && !c.h2->accepting()) continue;  // after the server's GOAWAY
        if (best == nullptr || c.outstanding.size() < best->outstanding.size()) {
          best = &c;
          best_index = i;
        }
      }
      if (best == nullptr) break;
      const Due due = backlog_.front();
      const int64_t intended = due.intended_ns;
      backlog_.pop_front();
      uint64_t id = next_id_++;
      const size_t before = best->out.size();
      uint32_t type = 0;
      if (best->h2) {
        // One stream; its frames are drained into `out` before the flush.
        type = h2_requests_->pick(rng_);
        if (!best->h2->submit(h2_requests_->request(type), id)) {
          ++result_.errors.protocol;
          continue;
        }
      } else {
        type = codec_->encode(best->out, id, rng_);
      }
      best->tx_bytes += static_cast<uint32_t>(best->out.size() - before);
      int64_t lateness = due.again() ? due.lateness_ns : now - intended;
      best->outstanding.push_back({intended, lateness,
                                   std::max<int64_t>(due.noticed_ns - intended, 0), id, type,
                                   best->tx_bytes - 1, best->h2 != nullptr});
      best->outstanding.back().sends = due.sends;
      if (!best->dirty) {
        best->dirty = true;
        dirty_.push_back(best_index);
      }
      if (due.again()) continue;
      ++result_.sent;
      result_.lateness.record(std::max<int64_t>(lateness, 0));
      const int64_t slot_wait = now - due.noticed_ns;
      result_.slot_wait.record(std::max<int64_t>(slot_wait, 0));
      if (slot_wait > config_.late_threshold_ns) ++result_.slot_late;
    }
    // One send per connection per pass: requests due together on the same
    // connection leave in one segment (pipelining), and the per-request
    // syscall cost is what limits the open-loop rate of one thread.
    for (size_t i : dirty_) {
      if (!conns_[i].dirty) continue;  // closed meanwhile
      conns_[i].dirty = false;
      if (conns_[i].h2 && !drain_h2(conns_[i])) {
        h2_broken(i, now);
        continue;
      }
      flush(i, now);
    }
    dirty_.clear();
  }

  void flush(size_t i, int64_t now) {
    auto& c = conns_[i];
    while (!c.out.empty()) {
      if (c.tls) {
        const auto w = c.tls->write(c.out.data(), c.out.size());
        if (w.bytes > 0) {
          c.out.erase(0, static_cast<size_t>(w.bytes));
          continue;
        }
        if (w.status == detail::TlsIo::kWantWrite || w.status == detail::TlsIo::kWantRead) break;
        fail(i, now, &ErrorCounts::write);
        return;
      }
      ssize_t n = ::send(c.fd.get(), c.out.data(), c.out.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n > 0) {
        c.out.erase(0, static_cast<size_t>(n));
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
      fail(i, now, &ErrorCounts::write);
      return;
    }
    watch(i, !c.out.empty());
  }

  // Adds or removes EPOLLOUT, with a syscall only when that changes.
  void watch(size_t i, bool want_write) {
    if (conns_[i].writing == want_write) return;
    conns_[i].writing = want_write;
    epoll_event ev{};
    ev.events = EPOLLIN | (want_write ? EPOLLOUT : 0u);
    ev.data.u64 = tag(i);
    ::epoll_ctl(epoll_.get(), EPOLL_CTL_MOD, conns_[i].fd.get(), &ev);
  }

  void open(size_t i, int64_t now) {
    auto& c = conns_[i];
    c = Connection{};
    common::FileDescriptor fd(
        ::socket(addr_.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (!fd) {
      ++result_.errors.connect;
      note_error(std::string("socket: ") + std::strerror(errno));
      c.retry_at_ns = now + kReconnectBackoffNs;
      return;
    }
    int one = 1;
    ::setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    // Refused (EPERM) before Linux 6.4 above net.core.busy_read without
    // CAP_NET_ADMIN: the connection goes on without busy polling, counted,
    // never failed.
    if (config_.busy_poll_us > 0 &&
        ::setsockopt(fd.get(), SOL_SOCKET, SO_BUSY_POLL, &config_.busy_poll_us,
                     sizeof config_.busy_poll_us) != 0) {
      ++result_.setup.busy_poll_refused;
    }
    int rc = ::connect(fd.get(), reinterpret_cast<const sockaddr*>(&addr_), addr_len_);
    if (rc != 0 && errno != EINPROGRESS) {
      ++result_.errors.connect;
      note_error(std::string("connect: ") + std::strerror(errno));
      c.retry_at_ns = now + kReconnectBackoffNs;
      return;
    }
    epoll_event ev{};
    c.generation = static_cast<uint32_t>(++opened_);
    c.writing = true;
    ev.events = EPOLLIN | EPOLLOUT;
    ev.data.u64 = tag(i);
    if (::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, fd.get(), &ev) != 0) {
      ++result_.errors.connect;
      c.retry_at_ns = now + kReconnectBackoffNs;
      return;
    }
    // A TLS or HTTP/2 connection that connected at once is set up from its
    // first EPOLLOUT, like any other.
    c.connected = rc == 0 && !tls_ && !h2_requests_;
    c.fd = std::move(fd);
    if (c.connected) on_connected(c);
    if (opened_ > conns_.size()) ++result_.reconnects;
  }

  // One more PHC/monotonic clock pair for the hardware-stamp mapping.
  void refresh_phc(int64_t now) {
    phc_map_.add(phc_->read());
    phc_refresh_ns_ = now + PhcMapping::kRefreshNs;
  }

  // SO_TIMESTAMPING with OPT_ID is refused (EINVAL) on a TCP socket that is
  // not yet connected, so it is enabled here. On failure the connection keeps
  // the user-space clock (its samples then say kUser): a data-path fallback,
  // not an error.
  void on_connected(Connection& c) {
    if (!kernel_stamps_) return;
    try {
      if (phc_) {
        enable_hardware_timestamps(c.fd.get());
      } else {
        enable_software_timestamps(c.fd.get());
      }
      c.timestamps = true;
    } catch (const std::system_error&) {
      ++result_.timestamp_fallbacks;
    }
  }

  // The server closes connection `i` gracefully: after the reply just
  // framed said so (HTTP/1.x `Connection: close`; nginx does so after
  // keepalive_requests, 1000 by default), or with nothing outstanding
  // (closed_at_eof). It processes nothing sent after that reply (RFC 9112
  // §9.6), so the requests still outstanding on it are sent again, oldest
  // first, and the connection reopens at once rather than after a failure's
  // backoff.
  void closed_by_server(size_t i, int64_t now) {
    auto& c = conns_[i];
    ++result_.setup.server_closes;
    for (auto it = c.outstanding.rbegin(); it != c.outstanding.rend(); ++it) {
      send_again(*it, &ErrorCounts::read);
    }
    c = Connection{};
    if (!sending_done_ || !backlog_.empty()) open(i, now);
  }

  // The server ended connection `i` (EOF, or a finished HTTP/2 session after
  // its GOAWAY). With nothing outstanding on a connection it has answered
  // on, that is the server recycling it or closing it idle: it reopens at
  // once. With requests outstanding, they fail as read errors (the server
  // may have processed them), and the reopen waits the failure's backoff.
  void closed_at_eof(size_t i, int64_t now) {
    const auto& c = conns_[i];
    if (c.outstanding.empty() && c.answered > 0) {
      closed_by_server(i, now);
    } else {
      fail(i, now, &ErrorCounts::read);
    }
  }

  // `o`, which the server did not process, goes back to the head of the
  // backlog with its intended send time, so its latency includes the
  // detour; it is counted once, as sent then. A request turned away
  // kMaxSends times fails as `kind` instead (a server refusing every
  // stream to shed load is not sent each one again and again).
  void send_again(const Outstanding& o, uint64_t ErrorCounts::*kind) {
    if (o.sends >= kMaxSends) {
      ++(result_.errors.*kind);
      return;
    }
    ++result_.setup.resent;
    backlog_.push_front({o.intended_ns, o.intended_ns + o.timer_lateness_ns, o.lateness_ns,
                         static_cast<uint8_t>(o.sends + 1)});
  }

  // Closes a broken connection; its outstanding requests fail with `kind`.
  void fail(size_t i, int64_t now, uint64_t ErrorCounts::*kind) {
    auto& c = conns_[i];
    result_.errors.*kind += std::max<size_t>(c.outstanding.size(), kind == &ErrorCounts::connect);
    c = Connection{};  // closes the fd, which also removes it from epoll
    c.retry_at_ns = now + kReconnectBackoffNs;
  }

  // The timeout runs from the intended send time, like the latency: a request
  // that waited in the backlog for longer than the timeout is timed out as
  // soon as it is at the head of its connection.
  void check_timeouts(int64_t now) {
    for (size_t i = 0; i < conns_.size(); ++i) {
      auto& c = conns_[i];
      if (!c.outstanding.empty() &&
          now - c.outstanding.front().intended_ns > config_.request_timeout_ns) {
        fail(i, now, &ErrorCounts::timeout);
      } else if (c.handshaking && now - c.tcp_connected_ns > config_.request_timeout_ns) {
        // A handshake gets one request timeout, like a request.
        note_error("TLS handshake with " + config_.host + ": no answer within the request timeout");
        fail(i, now, &ErrorCounts::connect);
      }
    }
  }

  // The timer is armed for the next intended send even while the backlog
  // waits for a slot: noticing a due send late would bill the client's
  // delay to the server as slot wait.
  int next_wait_ms(int64_t now) {
    int64_t wait_ns = 10'000'000;  // timeouts and reconnects are checked at least every 10 ms
    if (!sending_done_) {
      if (auto t = schedule_.peek()) {
        const int64_t lead = may_poll(now) ? lead_ns() : 0;
        const int64_t until = *t - now;
        if (until <= lead) return 0;  // spin (or due now)
        arm_timer(*t - lead);
        // The timerfd wakes us precisely; the epoll timeout is only a fallback.
        return static_cast<int>(std::min<int64_t>(wait_ns, until) / 1'000'000 + 1);
      }
    }
    return static_cast<int>(wait_ns / 1'000'000);
  }

  void handle(const epoll_event& ev) {
    int64_t now = common::monotonic_ns();
    if (ev.data.u64 == kTimerTag) {
      uint64_t expirations;
      [[maybe_unused]] ssize_t r = ::read(timer_.get(), &expirations, sizeof expirations);
      armed_ns_ = -1;
      return;
    }
    size_t i = ev.data.u64 & 0xffffffffu;
    auto& c = conns_[i];
    if (!c.fd || (ev.data.u64 >> 32) != c.generation) return;
    if (!c.connected) {
      if (c.handshaking) {
        step_handshake(i, now);
        return;
      }
      int err = 0;
      socklen_t len = sizeof err;
      ::getsockopt(c.fd.get(), SOL_SOCKET, SO_ERROR, &err, &len);
      if (err != 0 || (ev.events & (EPOLLERR | EPOLLHUP))) {
        note_error(std::string("connect: ") + std::strerror(err != 0 ? err : ECONNREFUSED));
        fail(i, now, &ErrorCounts::connect);
        return;
      }
      if (tls_) {
        c.tls = std::make_unique<detail::TlsStream>(*tls_, c.fd.get(), config_.host);
        c.handshaking = true;
        c.tcp_connected_ns = now;
        step_handshake(i, now);
        return;
      }
      ready(i, now);
      return;
    }
    // Queued TX stamps raise EPOLLERR; they are matched before the replies
    // they belong to are framed. An EPOLLERR with no stamp is a socket error,
    // which the read below reports.
    bool stamps = (ev.events & EPOLLERR) && drain_tx(c);
    if ((ev.events & (EPOLLIN | EPOLLHUP)) || ((ev.events & EPOLLERR) && !stamps)) read_ready(i);
    // A TLS write that waited for a read goes on after it.
    if (conns_[i].fd && ((ev.events & EPOLLOUT) || (conns_[i].tls && !conns_[i].out.empty()))) {
      flush(i, now);
    }
  }

  // One step of a connection's TLS handshake; ready() once it is done.
  void step_handshake(size_t i, int64_t now) {
    auto& c = conns_[i];
    switch (c.tls->handshake()) {
      case detail::TlsIo::kDone:
        break;
      case detail::TlsIo::kWantRead:
        watch(i, false);
        return;
      case detail::TlsIo::kWantWrite:
        watch(i, true);
        return;
      case detail::TlsIo::kClosed:
      case detail::TlsIo::kFailed:
        note_error("TLS handshake with " + config_.host + ": " + c.tls->error());
        fail(i, now, &ErrorCounts::connect);
        return;
    }
    c.handshaking = false;
    ++result_.setup.tls_handshakes;
    if (c.tls->offered()) ++result_.setup.tls_offered;
    if (c.tls->resumed()) ++result_.setup.tls_resumed;
    // A fresh reading: when the peer answers before our first read, the whole
    // handshake ends inside this one call, and `now` is from before it.
    result_.setup.tls_handshake.record(common::monotonic_ns() - c.tcp_connected_ns);
    if (h2_requests_ && c.tls->alpn_selected() != "h2") {
      note_error("the server did not choose HTTP/2 by ALPN (offered h2, got '" +
                 c.tls->alpn_selected() + "')");
      fail(i, now, &ErrorCounts::connect);
      return;
    }
    ready(i, now);
  }

  // The connection takes requests from now on (an HTTP/2 one once its
  // session exists; the preface and SETTINGS leave with the first flush).
  void ready(size_t i, int64_t now) {
    auto& c = conns_[i];
    c.connected = true;
    on_connected(c);
    if (h2_requests_) {
      c.h2 = std::make_unique<detail::H2Session>();
      if (!c.h2->ok() || !drain_h2(c)) {
        note_error("HTTP/2 session could not start");
        fail(i, now, &ErrorCounts::connect);
        return;
      }
    }
    if (c.out.empty()) {
      watch(i, false);
    } else {
      flush(i, now);
    }
    if (conns_[i].fd) dispatch(now);
  }

  // The session's frames into `out`. Every byte counts toward the kernel's
  // TX stamp offsets (SETTINGS and acknowledgements too), and once nothing
  // submitted is left in the session, the requests waiting for an offset
  // get the last byte queued: their own last bytes are at or before it.
  bool drain_h2(Connection& c) {
    const size_t before = c.out.size();
    if (!c.h2->drain(c.out)) return false;
    c.tx_bytes += static_cast<uint32_t>(c.out.size() - before);
    if (!c.h2->all_drained()) return true;
    for (auto it = c.outstanding.rbegin(); it != c.outstanding.rend() && it->key_pending; ++it) {
      it->end_key = c.tx_bytes - 1;
      it->key_pending = false;
    }
    return true;
  }

  // The HTTP/2 session cannot go on: the oldest outstanding request is the
  // protocol error, the rest are lost with the connection (as in frame()).
  void h2_broken(size_t i, int64_t now) {
    auto& c = conns_[i];
    ++result_.errors.protocol;
    if (!c.outstanding.empty()) c.outstanding.pop_front();
    fail(i, now, &ErrorCounts::read);
  }

  // Matches kernel TX stamps to outstanding requests by byte offset: a stamp
  // with key k covers every request whose last byte has offset <= k (mod 2^32).
  // True when the error queue held stamps.
  bool drain_tx(Connection& c) {
    if (!c.timestamps) return false;
    // Every byte encoded has left once c.out is empty: the stamp for the last
    // one is then the newest the queue can hold.
    std::optional<uint32_t> last_key;
    if (c.out.empty()) last_key = c.tx_bytes - 1;
    // With hardware stamps a send has two (software, then NIC), so the
    // queue is read to EAGAIN rather than stopping at the last key.
    read_tx_timestamps(c.fd.get(), stamps_, phc_ ? std::nullopt : last_key);
    for (const TxTimestamp& t : stamps_) {
      const bool hardware = phc_ && t.hardware_ns != 0;
      if (!hardware && t.software_ns == 0) continue;
      const int64_t at =
          hardware ? phc_map_.to_monotonic(t.hardware_ns) : t.software_ns - offset_ns_;
      for (auto& o : c.outstanding) {
        if (o.key_pending || static_cast<int32_t>(t.byte_key - o.end_key) < 0) break;
        if (o.tx_hardware || (o.tx_ns != INT64_MIN && !hardware)) continue;
        o.tx_ns = at;
        o.tx_hardware = hardware;
      }
    }
    return !stamps_.empty();
  }

  // Reads through TLS until it wants more from the socket; every record is
  // framed as it comes (a record holds at most 16 KiB).
  void read_tls(size_t i) {
    char buf[kReadChunk];
    for (;;) {
      auto& c = conns_[i];
      const auto r = c.tls->read(buf, sizeof buf);
      const int64_t rx_ns = common::monotonic_ns();
      if (r.bytes > 0) {
        c.in.append(buf, static_cast<size_t>(r.bytes));
        if (!frame(i, rx_ns, TimestampSource::kUser)) return;
        continue;
      }
      if (r.status == detail::TlsIo::kWantRead || r.status == detail::TlsIo::kWantWrite) return;
      if (r.status == detail::TlsIo::kClosed) {
        closed_at_eof(i, rx_ns);
      } else {
        fail(i, rx_ns, &ErrorCounts::read);
      }
      return;
    }
  }

  void read_ready(size_t i) {
    auto& c = conns_[i];
    if (c.tls) {
      read_tls(i);
      return;
    }
    char buf[kReadChunk];
    for (;;) {
      int64_t rx_ns;
      TimestampSource source = TimestampSource::kUser;
      long n;
      if (kernel_stamps_) {
        RecvResult r = recv_with_timestamp(c.fd.get(), buf, sizeof buf);
        rx_ns = common::monotonic_ns();
        n = r.bytes;
        if (phc_ && r.hardware_rx_ns) {
          rx_ns = phc_map_.to_monotonic(*r.hardware_rx_ns);
          source = TimestampSource::kHardware;
        } else if (r.software_rx_ns) {
          rx_ns = *r.software_rx_ns - offset_ns_;
          source = TimestampSource::kSoftware;
        }
      } else {
        n = ::recv(c.fd.get(), buf, sizeof buf, MSG_DONTWAIT);
        rx_ns = common::monotonic_ns();
      }
      if (n == 0) {
        closed_at_eof(i, rx_ns);
        return;
      }
      if (n < 0) {
        if (errno == EINTR) continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK) fail(i, rx_ns, &ErrorCounts::read);
        return;
      }
      c.in.append(buf, static_cast<size_t>(n));
      if (!frame(i, rx_ns, source)) return;
      // A short read emptied the socket: no second recvmsg just to see
      // EAGAIN (epoll is level-triggered and reports what comes next).
      if (static_cast<size_t>(n) < sizeof buf) return;
    }
  }

  // Frames every complete response in the buffer; false when the connection
  // was closed for a protocol error.
  bool frame(size_t i, int64_t rx_ns, TimestampSource source) {
    auto& c = conns_[i];
    if (c.h2) return frame_h2(i, rx_ns, source);
    size_t pos = 0;
    for (;;) {
      ResponseFrame f = codec_->parse(std::string_view(c.in).substr(pos));
      if (f.status == ParseStatus::kIncomplete) break;
      if (f.status == ParseStatus::kComplete && f.server_error && c.outstanding.empty()) {
        // An error reply before any request is the server refusing the
        // connection (memcached over its -c limit, redis over maxclients;
        // both then close it): a connect error, no request failed.
        fail(i, rx_ns, &ErrorCounts::connect);
        return false;
      }
      if (f.status == ParseStatus::kBad || c.outstanding.empty() ||
          (codec_->carries_request_id() && f.request_id != c.outstanding.front().id)) {
        // An unexpected or unframeable reply: the stream can no longer be
        // matched to requests. The first outstanding is the protocol error,
        // the rest are lost with the connection (counted as read errors).
        ++result_.errors.protocol;
        if (!c.outstanding.empty()) c.outstanding.pop_front();
        fail(i, rx_ns, &ErrorCounts::read);
        return false;
      }
      pos += f.consumed;
      Outstanding o = c.outstanding.front();
      c.outstanding.pop_front();
      ++c.answered;
      if (f.server_error) {
        server_error(o);
      } else {
        complete(o, rx_ns, source, f.service_time_ns);
      }
      if (f.closes_connection) {
        closed_by_server(i, rx_ns);
        return false;
      }
    }
    c.in.erase(0, pos);
    return true;
  }

  // An error reply times the server's refusal, not the request.
  void server_error(const Outstanding& o) {
    if (result_.by_type.size() <= o.type) result_.by_type.resize(o.type + 1);
    ++result_.errors.server;
    ++result_.by_type[o.type].server_errors;
  }

  // A reply that answered `o`: one sample.
  void complete(const Outstanding& o, int64_t rx_ns, TimestampSource source,
                int64_t service_time_ns) {
    if (result_.by_type.size() <= o.type) result_.by_type.resize(o.type + 1);
    ++result_.by_type[o.type].completed;
    Sample s;
    s.intended_ns = o.intended_ns;
    s.latency_ns = rx_ns - o.intended_ns;
    s.lateness_ns = o.lateness_ns;
    s.timer_lateness_ns = o.timer_lateness_ns;
    s.type = o.type;
    s.service_time_ns = service_time_ns;
    s.source = source;
    if (o.tx_ns != INT64_MIN) {
      s.lateness_ns = o.tx_ns - o.intended_ns;
      s.send_source = o.tx_hardware ? TimestampSource::kHardware : TimestampSource::kSoftware;
    }
    result_.latency.record(std::max<int64_t>(s.latency_ns, 0));
    ++result_.completed;
    if (config_.record_samples) result_.samples.push_back(s);
  }

  // Feeds an HTTP/2 connection's bytes to its session and ends the requests
  // whose streams closed, each by its own id; false when the connection was
  // closed (a protocol error, or the server's GOAWAY).
  bool frame_h2(size_t i, int64_t rx_ns, TimestampSource source) {
    auto& c = conns_[i];
    const bool ok = c.h2->receive(c.in);
    c.in.clear();
    for (const detail::H2Completion& done : c.h2->completions()) end_stream(c, done, rx_ns, source);
    c.h2->completions().clear();
    // What the session owes the server (SETTINGS and PING acknowledgements,
    // window updates) leaves at once.
    if (!ok || !drain_h2(c)) {
      h2_broken(i, rx_ns);
      return false;
    }
    if (!c.h2->alive()) {
      closed_at_eof(i, rx_ns);
      return false;
    }
    if (!c.out.empty() && !c.dirty) flush(i, rx_ns);
    return static_cast<bool>(conns_[i].fd);
  }

  // A closed stream: a sample, a server error (HTTP status >= 500, a gRPC
  // status other than OK, by code) or a protocol error (reset, no status).
  void end_stream(Connection& c, const detail::H2Completion& done, int64_t rx_ns,
                  TimestampSource source) {
    const auto it = std::find_if(c.outstanding.begin(), c.outstanding.end(),
                                 [&](const Outstanding& o) { return o.id == done.request_id; });
    if (it == c.outstanding.end()) return;  // every stream is one of ours
    const Outstanding o = *it;
    c.outstanding.erase(it);
    if (done.reset_code == detail::kRefusedStream) {
      // Not processed (RFC 9113 §8.7): a stream past the server's GOAWAY,
      // or one it refused. Sent again like a request behind a close.
      send_again(o, &ErrorCounts::protocol);
      return;
    }
    ++c.answered;
    if (done.reset_code != 0 || done.http_status == 0) {
      ++result_.errors.protocol;
      return;
    }
    if (h2_requests_->grpc() && done.http_status == 200) {
      if (done.grpc_status < 0) {
        ++result_.errors.protocol;
        return;
      }
      if (done.grpc_status != 0) {
        ++result_.errors.grpc_status[done.grpc_status];
        server_error(o);
        return;
      }
    } else if (h2_requests_->grpc() || done.http_status >= 500) {
      server_error(o);
      return;
    }
    complete(o, rx_ns, source, -1);
  }

  const EngineConfig& config_;
  size_t reserved_;             // samples reserved before the run (expected_samples)
  ScheduleSpec schedule_spec_;  // to start the schedule again later (release_gate)
  uint64_t schedule_seed_;
  int64_t start_ns_;  // this thread's first intended send before any shift
  Schedule schedule_;
  std::mt19937_64 rng_;
  std::unique_ptr<Codec> codec_;
  std::vector<Connection> conns_;
  uint64_t max_requests_;
  int64_t end_ns_;
  common::FileDescriptor epoll_;
  common::FileDescriptor timer_;
  sockaddr_storage addr_{};
  socklen_t addr_len_ = 0;
  int64_t offset_ns_ = 0;
  bool kernel_stamps_ = false;                       // kernel timestamps on these connections
  std::unique_ptr<detail::TlsContext> tls_;          // with config.tls.enabled
  std::unique_ptr<detail::H2Requests> h2_requests_;  // HTTP/2 and gRPC
  StartGate* gate_ = nullptr;  // set when connections are set up before the schedule
  bool arrived_ = false;
  int64_t run_start_ns_ = 0;       // the run's start_ns, before any shift
  std::unique_ptr<PhcClock> phc_;  // the NIC's clock when hardware stamps are on
  PhcMapping phc_map_;
  int64_t phc_refresh_ns_ = 0;
  struct Due {
    int64_t intended_ns;
    int64_t noticed_ns;  // when generate() moved it into the backlog
    // Above 1: sent before to a server that did not process it (send_again),
    // so it was counted and its lateness recorded at its first send.
    int64_t lateness_ns = 0;  // of that first send
    uint8_t sends = 1;        // the sends it will have had once sent
    bool again() const { return sends > 1; }
  };
  std::deque<Due> backlog_;         // intended sends not yet sent
  common::WakeupLateness wakeups_;  // this thread's timer wake-ups
  int64_t armed_ns_ = -1;           // the timerfd's target, -1 when not armed
  int64_t polled_ns_ = 0;
  int64_t poll_window_start_ns_ = 0;
  int64_t window_polled_ns_ = 0;
  std::vector<size_t> dirty_;        // connections with requests encoded, not yet flushed
  std::vector<TxTimestamp> stamps_;  // reused by drain_tx
  bool sending_done_ = false;
  uint64_t next_id_ = 1;
  size_t opened_ = 0;
  ThreadResult result_;
};

}  // namespace

void SendTimer::add(const SendTimer& t) {
  // The slice was granted only if it was to every thread of every round.
  const bool first = thread_run_ns == 0 && wakeups == 0;
  slice_ns = std::max(slice_ns, t.slice_ns);
  slice_granted = first ? t.slice_granted : slice_granted && t.slice_granted;
  if (slice_note.empty()) slice_note = t.slice_note;
  self_calibrated = t.self_calibrated;
  lead_ns = std::max(lead_ns, t.lead_ns);
  wakeup_p50_ns = std::max(wakeup_p50_ns, t.wakeup_p50_ns);
  wakeup_p99_ns = std::max(wakeup_p99_ns, t.wakeup_p99_ns);
  wakeups += t.wakeups;
  polled_ns += t.polled_ns;
  thread_run_ns += t.thread_run_ns;
}

namespace {

void validate_engine_config(const EngineConfig& config) {
  if (config.max_requests == 0 && config.duration_ns <= 0) {
    throw std::invalid_argument("engine: needs max_requests or duration_ns");
  }
  if (config.threads < 1) throw std::invalid_argument("engine: threads must be >= 1");
  if (config.connections < config.threads) {
    throw std::invalid_argument("engine: connections must be >= threads");
  }
  if (config.max_outstanding < 1) throw std::invalid_argument("engine: K must be >= 1");
  if (config.rt_priority < 0 || config.rt_priority > 99) {
    throw std::invalid_argument("engine: rt_priority must be in 0..99");
  }
  if (config.busy_poll_us < 0) throw std::invalid_argument("engine: busy_poll_us must be >= 0");
  if (config.request_timeout_ns <= 0) throw std::invalid_argument("engine: timeout must be > 0");
  if (config.spin_ns && *config.spin_ns < 0)
    throw std::invalid_argument("engine: spin must be >= 0");
  if (!(config.poll_budget >= 0.0 && config.poll_budget <= 1.0)) {
    throw std::invalid_argument("engine: poll budget must be in [0, 1]");
  }
  validate_cpus(config.cpus);
  (void)type_names(config.protocol);  // throws for a bad URL or method mix
}

// One worker per thread, each with its share of the schedule, connections
// and request bound; a thread whose share of the requests is 0 gets none.
std::vector<std::unique_ptr<Worker>> make_workers(const EngineConfig& config, int64_t start_ns) {
  auto parts = split(config.schedule, config.threads);
  const auto t = static_cast<uint64_t>(config.threads);
  std::vector<std::unique_ptr<Worker>> workers;
  for (int i = 0; i < config.threads; ++i) {
    const auto u = static_cast<uint64_t>(i);
    int conns = config.connections / config.threads + (i < config.connections % config.threads);
    uint64_t max =
        config.max_requests == 0 ? 0 : config.max_requests / t + (u < config.max_requests % t);
    if (config.max_requests != 0 && max == 0) continue;  // more threads than requests
    workers.push_back(std::make_unique<Worker>(
        config, parts[u], start_ns + split_phase_ns(config.schedule, i, config.threads),
        config.seed + 0x632be59bd9b4e019ULL * (u + 1), conns, max));
  }
  return workers;
}

// The body of load thread `i`: timer slack, CPU, priority, then the run.
// Any failure is kept in `failure` for the caller to rethrow.
void run_load_thread(const EngineConfig& config, size_t i, Worker& worker, ThreadResult& result,
                     std::exception_ptr& failure) {
  // The default 50 µs timer slack lets the kernel defer timerfd
  // wake-ups by that much: a quarter of late_threshold_ns and a visible
  // distortion of Poisson gaps at 10k+ rps. 1 ns asks for precise
  // wake-ups (per thread; the injector does the same).
  ::prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
  if (!config.cpus.empty()) {
    const int cpu = config.cpus[i % config.cpus.size()];
    if (const int err = pin_to(cpu); err != 0) {
      failure = std::make_exception_ptr(std::system_error(
          err, std::system_category(), "pinning a load thread to CPU " + std::to_string(cpu)));
      worker.release_gate(INT64_MIN);  // the other threads do not wait for this one
      return;
    }
  }
  if (config.rt_priority > 0) {
    const int err = make_realtime(config.rt_priority);
    if (err != 0) {
      failure = std::make_exception_ptr(realtime_refused(config.rt_priority, err));
      worker.release_gate(INT64_MIN);
      return;
    }
  }
  common::SliceRequest slice;
  if (config.rt_priority == 0 && config.slice_ns > 0) {
    slice = common::request_short_slice(config.slice_ns);
  }
  try {
    result = worker.run();
    result.timer.slice_ns = config.rt_priority == 0 ? config.slice_ns : 0;
    result.timer.slice_granted = slice.granted;
    result.timer.slice_note = slice.note;
  } catch (...) {
    failure = std::current_exception();
    worker.release_gate(INT64_MIN);
  }
}

// Runs every worker on its own thread; rethrows the first thread's failure.
std::vector<ThreadResult> run_load_threads(const EngineConfig& config,
                                           const std::vector<std::unique_ptr<Worker>>& workers,
                                           int64_t start_ns) {
  if (config.rt_priority > 0) {
    // Asked once on a throwaway thread, so a refusal costs no run.
    int err = 0;
    std::thread([&] { err = make_realtime(config.rt_priority); }).join();
    if (err != 0) throw realtime_refused(config.rt_priority, err);
  }
  // TLS and HTTP/2 connections are set up before the schedule starts.
  std::optional<StartGate> gate;
  if (config.tls.enabled || is_http2(config.protocol)) {
    gate.emplace(workers.size());
    for (const auto& w : workers) w->set_gate(&*gate, start_ns);
  }
  std::vector<ThreadResult> results(workers.size());
  std::vector<std::exception_ptr> failures(workers.size());
  {
    std::vector<std::jthread> threads;
    for (size_t i = 0; i < workers.size(); ++i) {
      threads.emplace_back(
          [&, i] { run_load_thread(config, i, *workers[i], results[i], failures[i]); });
    }
  }
  for (auto& f : failures) {
    if (f) std::rethrow_exception(f);
  }
  return results;
}

// The threads' results as one, samples in intended-send order.
EngineResult merge_results(const EngineConfig& config, std::vector<ThreadResult>& results,
                           int64_t start_ns) {
  EngineResult out;
  out.type_names = type_names(config.protocol);
  out.by_type.resize(out.type_names.size());
  out.first_intended_ns = INT64_MAX;
  out.last_intended_ns = INT64_MIN;
  for (auto& r : results) {
    out.samples.insert(out.samples.end(), r.samples.begin(), r.samples.end());
    out.intended_ns.insert(out.intended_ns.end(), r.intended_ns.begin(), r.intended_ns.end());
    out.latency.merge(r.latency);
    out.lateness.merge(r.lateness);
    out.timer_lateness.merge(r.timer_lateness);
    out.slot_wait.merge(r.slot_wait);
    out.timer.add(r.timer);
    out.scheduled += r.scheduled;
    out.sent += r.sent;
    out.completed += r.completed;
    out.late += r.late;
    out.slot_late += r.slot_late;
    out.reconnects += r.reconnects;
    out.timestamp_fallbacks += r.timestamp_fallbacks;
    out.setup.add(r.setup);
    out.errors.add(r.errors);
    add(out.by_type, r.by_type);
    out.first_intended_ns = std::min(out.first_intended_ns, r.first_intended_ns);
    out.last_intended_ns = std::max(out.last_intended_ns, r.last_intended_ns);
    out.thread_cpus.push_back(r.cpu);
  }
  if (out.scheduled == 0) out.first_intended_ns = out.last_intended_ns = start_ns;
  std::sort(out.samples.begin(), out.samples.end(),
            [](const Sample& a, const Sample& b) { return a.intended_ns < b.intended_ns; });
  std::sort(out.intended_ns.begin(), out.intended_ns.end());
  return out;
}

}  // namespace

EngineResult run_engine(const EngineConfig& config, int64_t start_ns) {
  validate_engine_config(config);
  if (config.tls.enabled && config.tls.resume_sessions && !config.tls.sessions) {
    // One cache for the run's threads, so each resumes what another was issued.
    EngineConfig shared = config;
    shared.tls.sessions = make_tls_session_cache();
    return run_engine(shared, start_ns);
  }
  const std::vector<std::unique_ptr<Worker>> workers = make_workers(config, start_ns);
  std::vector<ThreadResult> results = run_load_threads(config, workers, start_ns);
  return merge_results(config, results, start_ns);
}

}  // namespace nabla::loadgen
