#pragma once
// Open-loop load engine.
//
// Pieces and data flow:
//   EngineConfig ──split()──▶ T per-thread Schedules (schedule.hh) ──▶ T threads
//   Each thread owns one epoll loop, a timerfd armed at the next intended send
//   time (absolute CLOCK_MONOTONIC deadline, armed early by a lead and then
//   spun to; the lead is self-calibrated from the thread's own timer
//   wake-up lateness, common/wakeup_lateness.hh, or fixed by spin_ns), its share of the C
//   connections (non-blocking TCP, TCP_NODELAY) and one Codec (protocol.hh). Due intended times go
//   into a FIFO backlog when the loop notices them; the backlog is drained onto connections with
//   fewer than K requests outstanding (pipelining). A send's lateness (actual send - intended) has
//   two parts that mean opposite things (docs/timing.md):
//     timer lateness = noticed - intended: the loop woke or got round to it
//       late. The instrument's own error; `late` counts those over
//       late_threshold_ns, and the controller judges them against the answer.
//     slot wait = sent - noticed: every connection was at K. Part of the
//       service's latency in open loop (no coordinated omission: lancet §3,
//       tailbench §IV), never held against the verdict; `slot_late` counts
//       those over late_threshold_ns.
//   Latency is always measured from the intended send time. Send times never
//   depend on replies.
//   Received bytes are appended to the connection's buffer and framed by the
//   codec; each response completes the oldest outstanding request on its
//   connection: Sample{intended, latency = receive - intended, lateness, type,
//   server-reported service time, timestamp source} into the thread's vector
//   and LatencyHistogram. At the end the per-thread samples are concatenated
//   (sorted by intended time) and the histograms merged — samples are merged,
//   never per-thread percentiles averaged.
//   An error reply (codec's server_error) also ends the oldest outstanding
//   request, as a server error: no sample, no histogram entry.
//   Errors are counted by kind (connect, read, write, timeout, protocol,
//   server); a broken connection's outstanding requests are counted against
//   the error that broke it and the connection is reopened (after a short
//   backoff).
//   The run is bounded by max_requests and/or duration_ns, and after the last
//   send by request_timeout_ns for the stragglers.
//   Receive times: user-space CLOCK_MONOTONIC right after recv() (source
//   kUser), or with software_rx_timestamps the kernel's SO_TIMESTAMPING RX
//   software stamp of the last byte read (source kSoftware), converted to the
//   monotonic clock by an offset measured once per thread (timestamping.hh).
//   With timestamps on, the kernel TX stamp of each request (matched by byte
//   offset, OPT_ID) replaces the user-space send time in Sample::lateness_ns
//   (send_source kSoftware); the run-wide `late` count and lateness histogram
//   use the user-space send time, known at dispatch.
//
// TLS and HTTP/2 (tls_client.hh, h2_session.hh, both private):
//   With tls.enabled each connection runs a TLS handshake (OpenSSL) after its
//   TCP connect, stepped from the same epoll loop; its bytes then go through
//   the TLS stream instead of send()/recv(). With an HTTP/2 protocol (kHttp2,
//   kGrpc) each connection carries an nghttp2 session: a request is a stream,
//   up to max_outstanding streams per connection, and responses complete
//   their own request (matched by request id, in any order), not the oldest.
//   Either way the connections are set up first: every thread opens its
//   connections and finishes their handshakes before its first intended
//   send; the threads wait for each other, and when that took past start_ns
//   the whole schedule starts later by the same shift (setup.start_shift_ns),
//   so no handshake is ever inside a request's latency. The handshake times
//   are reported apart (setup), and a reconnect offers the session the
//   server last issued, so it may be resumed. Kernel timestamps are not used
//   through TLS (a TLS record is not a request); over h2c a request's send
//   stamp is that of the last byte drained with its frames, and a read's
//   receive stamp ends every stream the read closed (never before its bytes
//   arrived).
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "nabla/analysis/histogram.hh"
#include "nabla/common/wakeup_lateness.hh"
#include "nabla/loadgen/protocol.hh"
#include "nabla/loadgen/schedule.hh"
#include "nabla/loadgen/timestamping.hh"

namespace nabla::loadgen {

// The session a TLS server last issued, offered again by every new
// connection to it (thread-safe; tls_client.cc). One per target: shared by
// the load threads and, through copies of the config, by every round.
class TlsSessionCache;
std::shared_ptr<TlsSessionCache> make_tls_session_cache();

// TLS on every connection (https://, h2://, grpcs:// targets).
struct TlsSpec {
  bool enabled = false;
  // SNI and the name the certificate must carry; empty: the host address,
  // checked against the certificate's IP addresses.
  std::string server_name;
  std::string ca_file;  // PEM trust anchors; empty: the system's
  bool verify = true;   // false: any certificate (--insecure)
  bool resume_sessions = true;
  // Where sessions are kept for resumption; null: one per run_engine call.
  std::shared_ptr<TlsSessionCache> sessions;
};

struct EngineConfig {
  std::string host = "127.0.0.1";  // IPv4 or IPv6 literal (no brackets)
  uint16_t port = 0;
  TlsSpec tls;
  int threads = 1;
  int connections = 1;      // total, spread over threads (>= threads)
  int max_outstanding = 1;  // K per connection
  ScheduleSpec schedule;
  ProtocolSpec protocol;
  uint64_t max_requests = 0;  // 0 = no count bound
  int64_t duration_ns = 0;    // 0 = no time bound; at least one bound is required
  int64_t request_timeout_ns = 1'000'000'000;
  // A send later than intended + this is "late". 200 µs: above the usual
  // timerfd wake-up jitter of a loaded VM, far below any queueing we want to see.
  int64_t late_threshold_ns = 200'000;
  // Arm each send timer this early and busy-poll to the deadline. nullopt
  // (the default): self-calibrated, a high quantile of the thread's own
  // recent wake-up lateness (lateness options below); 0 = sleep only.
  std::optional<int64_t> spin_ns;
  common::WakeupLatenessOptions lateness{
      .window = 256, .lead_quantile = 0.95, .max_lead_ns = 300'000, .refresh_every = 16};
  // A thread polls (spin windows) for at most this fraction of each
  // millisecond; past it, it sleeps to the deadline itself. Bounds the
  // spin's CPU on a machine it shares with the server under test.
  double poll_budget = 0.5;
  // SCHED_FIFO priority of every load thread (1-99; 0 = normal scheduling).
  // A real-time thread is not preempted by the server or anything else
  // running under CFS, so its sends leave on time on a shared machine. Needs
  // root or CAP_SYS_NICE: run_engine throws std::runtime_error naming it.
  // The kernel's RT throttling (sched_rt_runtime_us) still leaves other
  // tasks 5% of each core, but a spinning real-time thread takes the rest:
  // keep threads below the number of cores (the `nabla load` flag refuses).
  int rt_priority = 0;
  // Told by the caller: a PM QoS CPU latency limit of 0 is held for the run
  // (idle CPUs poll). Only the late-sends remedies read it.
  bool cpu_latency_held = false;
  // Without rt_priority: the scheduler slice each load thread asks for
  // (common/sched_slice.hh), so that its send timer's wake-up preempts a
  // task of the fair class at once instead of after that task's slice
  // (EEVDF, Linux 6.6+, honours the request from 6.12). 0 = do not ask.
  // Needs no privilege and leaves the thread's CPU share as it was.
  int64_t slice_ns = 100'000;
  // CPUs the load threads run on: thread i is pinned to cpus[i % size()].
  // Empty = wherever the scheduler puts them. On a machine shared with the
  // server, pinning the server and the load threads to different cores keeps
  // the scheduler from stacking them on one core (measured on 2 vCPUs: wake-
  // ups placed nginx on the load thread's core, whose sends then waited up
  // to 1 ms behind it). Each CPU must be in the process's allowed set
  // (run_engine throws std::invalid_argument naming it).
  std::vector<int> cpus;
  // SO_BUSY_POLL on every connection socket, in µs (0 = leave it): a read
  // that finds nothing spins on the device queue this long instead of
  // waiting for its interrupt (lancet's latency agents; affects sockets on
  // a NIC with NAPI, not loopback). Before Linux 6.4 a process without
  // CAP_NET_ADMIN may ask at most net.core.busy_read; above it the kernel
  // refuses (EPERM) and the connection goes on without, counted in
  // ConnectionSetup::busy_poll_refused.
  // The host's own setting: never on the wire (wire.hh).
  int busy_poll_us = 0;
  bool software_rx_timestamps = false;
  // With software_rx_timestamps: the PTP clock of a NIC whose hardware
  // stamping is on (TimestampPlan::phc_index), -1 for none. Each thread then
  // also asks for raw hardware stamps, maps them to CLOCK_MONOTONIC through
  // /dev/ptpN (phc_clock.hh, re-read every 100 ms) and prefers them; a reply
  // or send without one keeps its software stamp.
  int phc_index = -1;
  bool record_samples = true;
  // Also keep the intended time of every scheduled send, answered or not
  // (EngineResult::intended_ns): failures per time window are then the
  // window's scheduled sends minus its samples.
  bool record_intended = false;
  uint64_t seed = 1;
  // When set and it becomes true, every thread stops within ~10 ms (the
  // loop's longest wait) without draining: requests still outstanding are
  // counted as timeouts. For callers that abandon a run (Ctrl-C).
  const std::atomic<bool>* stop = nullptr;
};

struct Sample {
  int64_t intended_ns = 0;  // monotonic
  int64_t latency_ns = 0;   // receive - intended
  int64_t lateness_ns = 0;  // actual send - intended (send per send_source)
  // The client's own part of lateness_ns: when its loop noticed the send was
  // due - intended (timer lateness, docs/timing.md). The rest is the wait for
  // a free connection slot (the service's) and the send itself.
  int64_t timer_lateness_ns = 0;
  uint32_t type = 0;
  int64_t service_time_ns = -1;
  TimestampSource source = TimestampSource::kUser;       // of the receive time
  TimestampSource send_source = TimestampSource::kUser;  // of the actual send time
};

// What `nabla load` answers (docs/method.md, "Response time"): the reply
// less the moment the client was ready to send, i.e. the sojourn from the
// intended send without the client's own timer lateness. Waits for a free
// connection slot (the service's) stay in it.
inline int64_t response_ns(const Sample& s) {
  return s.latency_ns - s.timer_lateness_ns;
}

// Diagnostic: the actual send (kernel TX stamp when there is one) to the
// reply, without the client's lateness and without slot waits.
inline int64_t in_flight_ns(const Sample& s) {
  return s.latency_ns - (s.lateness_ns > 0 ? s.lateness_ns : 0);
}

// How the load threads timed their sends.
struct SendTimer {
  bool self_calibrated = true;
  int64_t lead_ns = 0;        // the largest final lead of any thread
  int64_t wakeup_p50_ns = 0;  // the largest of the threads' wake-up lateness p50
  int64_t wakeup_p99_ns = 0;  // likewise p99
  uint64_t wakeups = 0;       // recorded, all threads
  // The scheduler slice the threads asked for (EngineConfig::slice_ns) and
  // whether every thread got it; slice_note says why not.
  int64_t slice_ns = 0;
  bool slice_granted = false;
  std::string slice_note;
  int64_t polled_ns = 0;      // spent polling, all threads
  int64_t thread_run_ns = 0;  // run time, all threads
  // Folds in another thread's (or round's) figures: leads and lateness
  // quantiles by maximum, counts and times by sum.
  void add(const SendTimer& other);
  double polled_fraction() const {
    return thread_run_ns > 0 ? static_cast<double>(polled_ns) / static_cast<double>(thread_run_ns)
                             : 0.0;
  }
};

struct ErrorCounts {
  uint64_t connect = 0;
  uint64_t read = 0;
  uint64_t write = 0;
  uint64_t timeout = 0;
  uint64_t protocol = 0;
  // Well-framed error replies (HTTP >= 500, RESP '-', memcached ERROR,
  // CLIENT_ERROR, SERVER_ERROR): the request failed, so it is neither
  // completed nor a latency sample.
  uint64_t server = 0;
  // gRPC calls answered with a non-OK grpc-status, by code (each is also
  // one of `server`).
  std::map<int, uint64_t> grpc_status;
  // Failures of every kind (a connect error is a failed attempt, which may
  // have carried no request).
  uint64_t total() const { return connect + read + write + timeout + protocol + server; }
  void add(const ErrorCounts& o);
};

// Replies of one transaction type (an index into type_names).
struct TypeCounts {
  uint64_t completed = 0;      // answered and sampled
  uint64_t server_errors = 0;  // answered with an error reply
};
// Adds `more` into `into` type by type (growing `into` when shorter).
void add(std::vector<TypeCounts>& into, const std::vector<TypeCounts>& more);

// How the connections were set up (TLS and HTTP/2 connections): never part
// of any request's latency.
struct ConnectionSetup {
  uint64_t tls_handshakes = 0;  // completed
  uint64_t tls_offered = 0;     // of those, offering a session issued earlier
  uint64_t tls_resumed = 0;     // of those, resumed sessions
  // TCP connected to handshake done, every completed handshake.
  analysis::LatencyHistogram tls_handshake;
  // How much later than start_ns the schedule began, because setting up
  // the connections took longer than the lead the caller gave (largest
  // over the rounds when added up).
  int64_t start_shift_ns = 0;
  std::string first_error;  // the first connect or handshake failure's text
  // Connections whose SO_BUSY_POLL (EngineConfig::busy_poll_us) the kernel
  // refused (before Linux 6.4: above net.core.busy_read without
  // CAP_NET_ADMIN). They run without busy polling.
  uint64_t busy_poll_refused = 0;
  // Connections the server ended gracefully, each reopened at once: after a
  // reply saying so (HTTP/1.x `Connection: close`, e.g. nginx after
  // keepalive_requests), at the end of an HTTP/2 session after its GOAWAY,
  // or closed with nothing outstanding after answering on it. And the
  // requests the server did not process (pipelined behind that reply, or
  // HTTP/2 streams refused with REFUSED_STREAM): they were sent again,
  // counted once and timed from their intended send.
  uint64_t server_closes = 0;
  uint64_t resent = 0;
  void add(const ConnectionSetup& other);
};

struct EngineResult {
  std::vector<Sample> samples;       // sorted by intended_ns
  std::vector<int64_t> intended_ns;  // with record_intended: every scheduled send, sorted
  analysis::LatencyHistogram latency;
  analysis::LatencyHistogram lateness;        // of every request sent: timer lateness + slot wait
  analysis::LatencyHistogram timer_lateness;  // noticed - intended, every request scheduled
  analysis::LatencyHistogram slot_wait;       // sent - noticed, every request sent
  uint64_t scheduled = 0;                     // intended send times generated
  uint64_t sent = 0;
  uint64_t completed = 0;  // answered without an error: one sample each
  uint64_t late = 0;       // timer lateness > late_threshold_ns (the client's own)
  uint64_t slot_late = 0;  // slot wait > late_threshold_ns (all connections at K)
  SendTimer timer;
  ErrorCounts errors;
  std::vector<TypeCounts> by_type;  // indexed like type_names
  uint64_t reconnects = 0;
  uint64_t timestamp_fallbacks = 0;  // connections where SO_TIMESTAMPING was refused
  ConnectionSetup setup;
  int64_t first_intended_ns = 0;
  int64_t last_intended_ns = 0;
  std::vector<std::string> type_names;
  // The CPU each load thread last ran on (sched_getcpu at its end), in
  // thread order: shows where the threads ran, and that cpus was obeyed.
  std::vector<int> thread_cpus;
  // Completed requests per second over [first, last] intended time.
  double achieved_rate() const;
};

// Throws std::invalid_argument on a bad configuration (no bound, threads < 1,
// connections < threads, K < 1, bad schedule or protocol) and
// std::system_error when a thread cannot set up epoll/timerfd. Data-path
// failures are counted in the result, never thrown. start_ns is the first
// intended send time (monotonic).
EngineResult run_engine(const EngineConfig& config, int64_t start_ns);

// Throws std::invalid_argument naming the first CPU this process may not run
// on (the message lists the allowed ones, e.g. "allowed: 0-1").
void validate_cpus(const std::vector<int>& cpus);

}  // namespace nabla::loadgen
