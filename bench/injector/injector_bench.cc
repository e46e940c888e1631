// Injector benchmark, all figures measured in one run on one testbed (two
// namespaces joined by a veth pair; traffic never leaves them):
//   1. UDP throughput across the veth: no rule, through the floor consumer
//      (the least any NFQUEUE program can do: accept every packet at once),
//      through nabla-injectd at zero delay, and at 1 ms constant delay, as
//      ratios of the no-rule baseline;
//      once with the rule on the sender's OUTPUT (direction out) and once on
//      the receiver's INPUT (direction in).
//   2. Accuracy with 1 ms delay at 10k and 50k packets/s: receiver-measured
//      |actual - requested| median and p99, for nabla-injectd and for a naive
//      reference delayer that sleeps in its packet callback.
//   3. With --wave-check 1, only the wave check (wave_check_section): is the
//      delay step a square wave gives at the receiver the one the daemon
//      reports, per release mode.
// Usage: injector_bench [--seconds S] [--spin-us N[,N...]] [--busy-poll-us N] [--throughput-rt P]
//        [--accuracy-rt P] [--throughput-dir out,in]
//        [--pin 0|1] [--wave-check 1]   (root)
//        injector_bench --naive QUEUE DELAY_US   (internal: the naive delayer)
//        injector_bench --floor QUEUE STAMPS LIMIT   (internal: the floor consumer)
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "nabla/common/clock.hh"
#include "nabla/common/cpu_latency.hh"
#include "nabla/injector/nfqueue.hh"
#include "nabla/testbed/injector_testbed.hh"

namespace {

using nabla::testbed::InjectorTestbed;
using nabla::testbed::ProbeResult;

// The hobby-delayer design docs/design.md ("nabla-injectd") warns about: sleep in the callback.
int run_naive(uint16_t queue_num, int64_t delay_us) {
  nabla::injector::NfQueueConfig config;
  config.queue_num = queue_num;
  nabla::injector::NfQueue queue(config);
  for (;;) {
    pollfd p{queue.fd(), POLLIN, 0};
    if (::poll(&p, 1, 1000) < 0) return 1;
    queue.receive([&](const nabla::injector::QueuedPacket& packet) {
      ::usleep(static_cast<useconds_t>(delay_us));
      queue.verdict(packet.id, nabla::injector::NfQueue::kAccept);
      queue.flush();
    });
  }
}

// The floor for any NFQUEUE injector: the least a consumer can do per
// packet. It blocks in poll() until the queue socket is readable, drains
// it, accepts everything it got with one batch verdict and loops. It keeps
// no state, times nothing and never delays, so what it costs the sender and
// the receiver beyond the no-rule baseline is the kernel's queue round trip
// (netlink message per packet, wake-up, verdict, reinjection), which nabla
// pays too. Same queue settings as nabla-injectd's zero-delay injection in
// the same direction (kernel receive stamps for "in" only), and it holds the
// same CPU latency limit as the daemon does while it injects, so that
// nabla / floor is the cost of nabla's own work and nothing else.
int run_floor(uint16_t queue_num, bool kernel_stamps, const std::string& cpu_latency) {
  std::optional<nabla::common::CpuLatencyRequest> limit;
  if (const auto us = nabla::common::parse_cpu_latency_limit(cpu_latency)) limit.emplace(*us);
  nabla::injector::NfQueueConfig config;
  config.queue_num = queue_num;
  config.kernel_stamps = kernel_stamps;
  nabla::injector::NfQueue queue(config);
  for (;;) {
    pollfd p{queue.fd(), POLLIN, 0};
    if (::poll(&p, 1, 1000) < 0) return 1;
    uint32_t last = 0;
    bool any = false;
    queue.receive([&](const nabla::injector::QueuedPacket& packet) {
      last = packet.id;
      any = true;
    });
    if (any) {
      queue.batch_verdict(last, nabla::injector::NfQueue::kAccept);
      queue.flush();
    }
  }
}

int64_t thread_cpu_ns() {
  timespec ts{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1'000'000'000LL + ts.tv_nsec;
}

// CPU time (user + system) of a whole process, from /proc (10 ms ticks).
int64_t process_cpu_ns(pid_t pid) {
  if (pid <= 0) return 0;
  std::FILE* f = std::fopen(("/proc/" + std::to_string(pid) + "/stat").c_str(), "r");
  if (f == nullptr) return 0;
  char buf[1024] = {};
  const size_t n = std::fread(buf, 1, sizeof buf - 1, f);
  std::fclose(f);
  // Fields after the ")" of the command name: state is field 3; utime 14, stime 15.
  const char* p = std::strrchr(buf, ')');
  if (p == nullptr || n == 0) return 0;
  unsigned long long utime = 0;
  unsigned long long stime = 0;
  if (std::sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &utime, &stime) !=
      2) {
    return 0;
  }
  return static_cast<int64_t>((utime + stime) * 1'000'000'000ULL /
                              static_cast<unsigned long long>(::sysconf(_SC_CLK_TCK)));
}

// Placement and priority, the same in every configuration. Decision, from
// measurements on the 2-core CI VM: the sender runs on CPU 0; the receiver
// and the daemon share CPU 1. Unpinned, the three busy parties bounce
// between two cores and every packet costs cross-CPU wake-ups (the daemon
// then spends 10-15 us of CPU per packet instead of ~3). SCHED_FIFO for the
// sender and receiver was tried and rejected: a spinning FIFO sender starves
// the receiver's softirq work and gets RT-throttled. Instead they run at
// nice -10, which shields them from other users of the shared machine
// (compilers) without those pathologies. --pin 0 turns placement off.
int g_pin = 1;

std::string g_self;  // argv[0]: the floor consumer and the naive delayer are this binary

// Pins a thread (tid 0: the caller) to one CPU.
void pin(pid_t tid, int cpu) {
  if (g_pin == 0) return;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  ::sched_setaffinity(tid, sizeof set, &set);
}

// Every thread of a process onto one CPU.
void pin_process(pid_t pid, int cpu) {
  const auto r =
      nabla::common::run_command({"ls", "/proc/" + std::to_string(pid) + "/task"}, nullptr);
  std::istringstream tids(r.stdout_text);
  std::string tid;
  while (tids >> tid) pin(static_cast<pid_t>(std::stol(tid)), cpu);
}

void set_nice(int nice) {
  ::setpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()), nice);
}

// Datagrams the receiving host dropped: UDP receive-buffer errors (in the
// receiver's namespace) plus the per-CPU backlog drops (host-wide).
uint64_t receive_side_drops(InjectorTestbed& bed) {
  uint64_t drops = 0;
  const auto snmp = bed.receiver().run({"cat", "/proc/net/snmp"}).stdout_text;
  // Second "Udp:" line: values; RcvbufErrors is the 6th value.
  size_t at = snmp.find("Udp:");
  if (at != std::string::npos) at = snmp.find("Udp:", at + 4);
  if (at != std::string::npos) {
    unsigned long long v[6] = {};
    if (std::sscanf(snmp.c_str() + at, "Udp: %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2],
                    &v[3], &v[4], &v[5]) == 6) {
      drops += v[4];
    }
  }
  std::FILE* f = std::fopen("/proc/net/softnet_stat", "r");
  if (f != nullptr) {
    unsigned processed = 0;
    unsigned dropped = 0;
    char line[512];
    while (std::fgets(line, sizeof line, f) != nullptr) {
      if (std::sscanf(line, "%x %x", &processed, &dropped) == 2) drops += dropped;
    }
    std::fclose(f);
  }
  return drops;
}

// Rescheduling and function-call IPIs received, summed over CPUs
// (/proc/interrupts RES + CAL): each is a cross-CPU wake-up, and on a VM
// an exit on the sending vCPU.
uint64_t wakeup_ipis() {
  std::FILE* f = std::fopen("/proc/interrupts", "r");
  if (f == nullptr) return 0;
  uint64_t total = 0;
  char line[1024];
  while (std::fgets(line, sizeof line, f) != nullptr) {
    const char* p = line;
    while (*p == ' ') ++p;
    if (std::strncmp(p, "RES:", 4) != 0 && std::strncmp(p, "CAL:", 4) != 0) continue;
    p += 4;
    char* end = nullptr;
    for (;;) {
      const unsigned long long v = std::strtoull(p, &end, 10);
      if (end == p) break;
      total += v;
      p = end;
    }
  }
  std::fclose(f);
  return total;
}

struct Blast {
  double sent_pps = 0;
  double received_pps = 0;
  double sender_cpu = 0;  // CPU seconds per wall second of each party
  double receiver_cpu = 0;
  double daemon_cpu = 0;
  uint64_t dropped = 0;        // by the receiving host (socket buffer, backlog)
  double ipis_per_packet = 0;  // cross-CPU wake-ups (wakeup_ipis) per delivered packet
};

// What the receiving thread of a blast counts, read by the sender after it
// has joined.
struct ReceiverCounts {
  std::atomic<uint64_t> received{0};
  std::atomic<int64_t> last_ns{0};  // when the last datagram was delivered
  std::atomic<int64_t> cpu_ns{0};
};

// The receiver of a blast: drains its socket with recvmmsg, so it costs
// little per datagram, until `done`.
void drain_receiver(int fd, const std::atomic<bool>& done, ReceiverCounts& counts) {
  set_nice(-10);
  pin(0, 1);
  const int64_t cpu0 = thread_cpu_ns();
  constexpr unsigned kBatch = 64;
  static char bufs[kBatch][128];
  mmsghdr msgs[kBatch] = {};
  iovec iovs[kBatch] = {};
  for (unsigned i = 0; i < kBatch; ++i) {
    iovs[i] = {bufs[i], sizeof bufs[i]};
    msgs[i].msg_hdr.msg_iov = &iovs[i];
    msgs[i].msg_hdr.msg_iovlen = 1;
  }
  while (!done) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 50) <= 0) continue;
    int n = 0;
    while ((n = ::recvmmsg(fd, msgs, kBatch, MSG_DONTWAIT, nullptr)) > 0) {
      const int64_t now = nabla::common::monotonic_ns();
      counts.received += static_cast<uint64_t>(n);
      counts.last_ns = now;
    }
  }
  counts.cpu_ns = thread_cpu_ns() - cpu0;
}

// Sends 64-byte datagrams to `to` from the calling thread until `end_ns`;
// returns how many the socket took.
uint64_t send_until(int fd, const sockaddr_in& to, int64_t end_ns) {
  char payload[64] = {};
  uint64_t sent = 0;
  while (nabla::common::monotonic_ns() < end_ns) {
    for (int i = 0; i < 64; ++i) {
      if (::sendto(fd, payload, sizeof payload, 0, reinterpret_cast<const sockaddr*>(&to),
                   sizeof to) > 0) {
        ++sent;
      }
    }
  }
  return sent;
}

// Sends 64-byte datagrams as fast as one thread can for `seconds`; the
// receiver drains its socket in a loop. The same sender, receiver, payload
// and socket buffers serve every configuration, so only the rule differs.
// consumer: the pid whose CPU time is reported as the daemon's (nabla-injectd
// or the floor consumer; 0 for none).
Blast blast(InjectorTestbed& bed, double seconds, pid_t consumer) {
  nabla::common::FileDescriptor rx = bed.receiver().socket(AF_INET, SOCK_DGRAM, 0);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(9000);
  ::inet_pton(AF_INET, nabla::testbed::kReceiverIp, &to.sin_addr);
  ::bind(rx.get(), reinterpret_cast<sockaddr*>(&to), sizeof to);
  int big = 16 << 20;
  ::setsockopt(rx.get(), SOL_SOCKET, SO_RCVBUFFORCE, &big, sizeof big);
  nabla::common::FileDescriptor tx = bed.sender().socket(AF_INET, SOCK_DGRAM, 0);
  ::setsockopt(tx.get(), SOL_SOCKET, SO_SNDBUFFORCE, &big, sizeof big);
  std::atomic<bool> done{false};
  ReceiverCounts counts;
  std::thread receiver([&] { drain_receiver(rx.get(), done, counts); });
  set_nice(-10);
  cpu_set_t all;
  ::sched_getaffinity(0, sizeof all, &all);
  pin(0, 0);
  const uint64_t drops0 = receive_side_drops(bed);
  const uint64_t ipis0 = wakeup_ipis();
  const int64_t daemon_cpu0 = process_cpu_ns(consumer);
  const int64_t cpu0 = thread_cpu_ns();
  const int64_t begin = nabla::common::monotonic_ns();
  const uint64_t sent = send_until(tx.get(), to, begin + static_cast<int64_t>(seconds * 1e9));
  const int64_t sent_end = nabla::common::monotonic_ns();
  const uint64_t ipis = wakeup_ipis() - ipis0;
  const int64_t sender_cpu = thread_cpu_ns() - cpu0;
  set_nice(0);
  ::sched_setaffinity(0, sizeof all, &all);  // the later phases run unpinned
  ::usleep(300'000);
  const int64_t daemon_cpu = process_cpu_ns(consumer) - daemon_cpu0;
  done = true;
  receiver.join();
  const uint64_t received = counts.received;
  const double wall = static_cast<double>(sent_end - begin);
  // Delivered rate over the whole episode: from the first send to the last
  // delivery (or the end of sending), so a backlog delivered late counts.
  const double span =
      static_cast<double>(std::max<int64_t>(counts.last_ns, sent_end) - begin) / 1e9;
  Blast out;
  out.dropped = receive_side_drops(bed) - drops0;
  out.ipis_per_packet =
      static_cast<double>(ipis) / std::max<double>(1.0, static_cast<double>(received));
  out.sent_pps = static_cast<double>(sent) / (wall / 1e9);
  out.received_pps = span > 0 ? static_cast<double>(received) / span : 0.0;
  out.sender_cpu = static_cast<double>(sender_cpu) / wall;
  out.receiver_cpu = static_cast<double>(counts.cpu_ns) / wall;
  out.daemon_cpu = static_cast<double>(daemon_cpu) / wall;
  return out;
}

void print_blast(const char* who, const Blast& b, double base, const char* target) {
  std::printf(
      "  %-18s %8.0f pps  %.2f%s   (sent %8.0f pps; CPU s/s: sender %.2f receiver %.2f"
      " consumer %.2f; IPIs per packet %.3f; receive-side drops %llu)\n",
      who, b.received_pps, b.received_pps / base, target, b.sent_pps, b.sender_cpu, b.receiver_cpu,
      b.daemon_cpu, b.ipis_per_packet, static_cast<unsigned long long>(b.dropped));
}

struct Accuracy {
  int64_t median_ns = 0;  // |one-way delay - requested - base|
  int64_t p99_ns = 0;
  int64_t raw_median_ns = 0;  // |one-way delay - requested|
  int64_t raw_p99_ns = 0;
  size_t lost = 0;
  size_t early = 0;  // delivered before the requested delay had passed
};

int64_t nearest_rank(const std::vector<int64_t>& sorted, double q) {
  if (sorted.empty()) return 0;
  const auto rank = static_cast<size_t>(std::ceil(q * static_cast<double>(sorted.size())));
  return sorted[std::min(sorted.size(), std::max<size_t>(rank, 1)) - 1];
}

// base_ns: the median one-way delay of the same probes with no rule (veth
// and stack), subtracted so the figure is the injector's own error.
Accuracy accuracy(InjectorTestbed& bed, double rate, double seconds, int64_t requested_ns,
                  int64_t base_ns) {
  const auto probes =
      nabla::testbed::run_udp_probes(bed, 9000, static_cast<int>(rate * seconds), rate);
  std::vector<int64_t> err;
  std::vector<int64_t> raw;
  size_t early = 0;
  for (const auto& p : probes) {
    if (p.copies == 0) continue;
    err.push_back(std::llabs(p.delay_ns - requested_ns - base_ns));
    raw.push_back(std::llabs(p.delay_ns - requested_ns));
    early += p.delay_ns < requested_ns ? 1 : 0;
  }
  std::sort(err.begin(), err.end());
  std::sort(raw.begin(), raw.end());
  return {nearest_rank(err, 0.5),  nearest_rank(err, 0.99),      nearest_rank(raw, 0.5),
          nearest_rank(raw, 0.99), nabla::testbed::lost(probes), early};
}

void print_accuracy(const char* who, double rate, const Accuracy& a) {
  std::printf(
      "  %-20s %6.0f pps: |error| median %8.1f us p99 %8.1f us (raw %7.1f / %8.1f us) lost "
      "%zu early %zu\n",
      who, rate, a.median_ns / 1e3, a.p99_ns / 1e3, a.raw_median_ns / 1e3, a.raw_p99_ns / 1e3,
      a.lost, a.early);
}

// "median M (min A max B)" of per-round ratios.
std::string spread(std::vector<double> ratios) {
  std::sort(ratios.begin(), ratios.end());
  char text[64];
  std::snprintf(text, sizeof text, "median %.2f (min %.2f max %.2f)", ratios[ratios.size() / 2],
                ratios.front(), ratios.back());
  return text;
}

// Where the daemon's time goes, per packet, from its own counters.
double wakeups(InjectorTestbed& bed, const nlohmann::json& id) {
  return bed.call("inject.stats", {{"id", id}}).at("loop_wakeups").get<double>();
}

// wakeups_before: the loop's wake-up count when the injection started.
void print_profile(const nlohmann::json& stats, double wakeups_before) {
  const double packets = std::max(1.0, stats.at("packets").get<double>());
  std::printf(
      "  %-20s per packet: %.3f recv calls, %.3f verdict sends, %.3f loop wake-ups "
      "(%.0f packets, %lld batch verdicts, %lld single, enobufs %lld); %.1f us per verdict "
      "send\n",
      "", stats.at("receive_calls").get<double>() / packets,
      stats.at("verdict_sends").get<double>() / packets,
      (stats.at("loop_wakeups").get<double>() - wakeups_before) / packets, packets,
      stats.at("batch_verdicts").get<long long>(), stats.at("verdicts").get<long long>(),
      stats.at("enobufs").get<long long>(),
      stats.at("verdict_send_ns").get<double>() / 1e3 /
          std::max(1.0, stats.at("verdict_sends").get<double>()));
}

// The running daemon's release timing (daemon.info "timer").
void print_timer(InjectorTestbed& bed) {
  const auto t = bed.call("daemon.info", nlohmann::json::object()).at("timer");
  const auto& l = t.at("wakeup_lateness_us");
  std::printf(
      "  %-20s timer %s: lead %.1f us; wake-up lateness p50 %.1f us p90 %.1f us p99 %.1f us "
      "(%llu recorded); polling %.1f%% of its uptime\n",
      "", t.at("mode").get<std::string>().c_str(), t.at("lead_us").get<double>(),
      l.at("p50").get<double>(), l.at("p90").get<double>(), l.at("p99").get<double>(),
      l.at("recorded").get<unsigned long long>(), 100.0 * t.at("polled_fraction").get<double>());
}

// The link every injection here delays: the probes' and the blasts' UDP port.
constexpr const char* kProbeLink = "udp 10.77.0.1 -> 10.77.0.2:9000";

// One accuracy row per rate for the running daemon, plus its own view.
// dir "in": the daemon runs on the receiving host.
void accuracy_rows(InjectorTestbed& bed, const char* who, double seconds, int64_t base_ns,
                   const char* dir = "out") {
  for (double rate : {10'000.0, 50'000.0}) {
    const auto id =
        bed.call("inject.start",
                 {{"link", kProbeLink}, {"direction", dir}, {"delay", "1ms"}, {"lease_s", 600}})
            .at("id");
    const double before = wakeups(bed, id);
    print_accuracy(who, rate, accuracy(bed, rate, seconds, 1'000'000, base_ns));
    const auto stats = bed.call("inject.stats", {{"id", id}});
    print_profile(stats, before);
    std::printf(
        "  %-20s %6.0f pps: daemon's actual delay p50 %.1f us mean %.1f us p99 %.1f us; %lld "
        "batch verdicts for %lld packets (%lld timed from the kernel's stamp); enobufs %lld\n",
        "", rate, stats.at("actual_delay_ns").at("p50").get<double>() / 1e3,
        stats.at("actual_delay_ns").at("mean").get<double>() / 1e3,
        stats.at("actual_delay_ns").at("p99").get<double>() / 1e3,
        stats.at("batch_verdicts").get<long long>(), stats.at("packets").get<long long>(),
        stats.at("kernel_stamped").get<long long>(), stats.at("enobufs").get<long long>());
    bed.call("inject.stop", {{"id", id}});
  }
}

// The throughput rows of one rule placement (see throughput_rows): the four
// configurations, the last round's blasts and every round's ratios.
class ThroughputRows {
 public:
  // cpu_latency: the daemon's --cpu-latency-us, also held by the floor
  // consumer while it runs (it is idle outside its own rows, like the daemon).
  ThroughputRows(InjectorTestbed& bed, const std::string& dir, const std::string& cpu_latency,
                 bool aa)
      : bed_(bed),
        dir_(dir),
        cpu_latency_(cpu_latency),
        aa_(aa),
        // The floor consumer runs on the daemon's host and CPU, and its rule
        // goes first in the same base chain while its rows run.
        host_(dir == "in" ? bed.receiver() : bed.sender()),
        floor_rule_({dir == "in" ? "INPUT" : "OUTPUT", "-p", "udp", "--dport", "9000", "-j",
                     "NFQUEUE", "--queue-num", kFloorQueue, "--queue-bypass"}) {}

  // One round runs each configuration once. The orders are the rows of a
  // Williams square, one per round (rounds are a multiple of 4): over four
  // rounds each configuration takes each position once and follows each
  // other configuration once, so whatever one leaves behind for the next
  // 0.5 s lands on every configuration alike instead of on a fixed one. In
  // a plain run order the no-rule row always followed nabla's 1 ms row.
  // With --aa 1 every configuration does its setup and teardown but blasts
  // with no rule in place: every ratio should then read 1.00 within the
  // noise, which is the check that the schedule itself favours nobody.
  void run_round(int r) {
    static constexpr int kWilliams[4][4] = {{0, 1, 3, 2}, {1, 2, 0, 3}, {2, 3, 1, 0}, {3, 0, 2, 1}};
    for (const int config : kWilliams[r % 4]) run_config(config);
    floor_ratio_.push_back(floor_.received_pps / base_.received_pps);
    zero_ratio_.push_back(zero_.blast.received_pps / base_.received_pps);
    zero_of_floor_.push_back(zero_.blast.received_pps / floor_.received_pps);
    one_ratio_.push_back(one_ms_.blast.received_pps / base_.received_pps);
  }

  void print() const {
    std::printf(" direction %s (daemon on the %s host)%s, last round:\n", dir_.c_str(),
                dir_ == "in" ? "receiving" : "sending",
                aa_ ? " [A/A CHECK: no rule during any blast; every ratio should be 1.00]" : "");
    print_blast("no rule", base_, base_.received_pps, "      ");
    print_blast("floor consumer", floor_, base_.received_pps, "      ");
    print_blast("nabla, 0 delay", zero_.blast, base_.received_pps, "      ");
    print_profile(zero_.stats, zero_.wakeups_before);
    print_blast("nabla, 1 ms", one_ms_.blast, base_.received_pps, "      ");
    print_profile(one_ms_.stats, one_ms_.wakeups_before);
    std::printf("  ratio nabla %-3s 0 delay / no rule: %s; target >= 0.90\n", dir_.c_str(),
                spread(zero_ratio_).c_str());
    std::printf("  ratio nabla %-3s 1 ms / no rule:    %s; target >= 0.85\n", dir_.c_str(),
                spread(one_ratio_).c_str());
    std::printf("  ratio floor %-3s / no rule:         %s: the kernel's queue round trip alone\n",
                dir_.c_str(), spread(floor_ratio_).c_str());
    std::printf("  ratio nabla %-3s 0 delay / floor:   %s\n", dir_.c_str(),
                spread(zero_of_floor_).c_str());
  }

 private:
  static constexpr const char* kFloorQueue = "4000";

  // A row of nabla-injectd's: its blast, the injection's stats and the
  // loop's wake-up count when the injection started.
  struct NablaRow {
    Blast blast;
    nlohmann::json stats;
    double wakeups_before = 0;
  };

  void run_config(int config) {
    switch (config) {
      case 0:
        base_ = blast(bed_, 0.5, 0);
        break;
      case 1:
        floor_row();
        break;
      default:
        nabla_row(config == 2);
        break;
    }
  }

  // The floor consumer is started for its own row only, as the daemon holds
  // its CPU latency limit only while it injects.
  void floor_row() {
    nabla::common::ChildProcess consumer(
        {g_self, "--floor", kFloorQueue, dir_ == "out" ? "0" : "1", cpu_latency_}, &host_);
    ::usleep(50'000);  // bound to its queue long before this
    // Without a consumer --queue-bypass would pass the packets straight
    // through and the row would silently measure no rule.
    if (!consumer.running()) throw std::runtime_error("the floor consumer exited at start");
    pin_process(consumer.pid(), 1);
    host_.run_checked(floor_iptables("-I"));
    if (aa_) host_.run_checked(floor_iptables("-D"));
    floor_ = blast(bed_, 0.5, consumer.pid());
    if (!consumer.running()) throw std::runtime_error("the floor consumer exited mid-row");
    if (!aa_) host_.run_checked(floor_iptables("-D"));
    consumer.signal(SIGTERM);
    consumer.wait(std::chrono::milliseconds(2000));
  }

  void nabla_row(bool zero_delay) {
    const auto id = bed_.call("inject.start", {{"link", kProbeLink},
                                               {"direction", dir_},
                                               {"delay", zero_delay ? "0" : "1ms"},
                                               {"lease_s", 600}})
                        .at("id");
    NablaRow& row = zero_delay ? zero_ : one_ms_;
    row.wakeups_before = wakeups(bed_, id);
    auto finish = [&] {
      row.stats = bed_.call("inject.stats", {{"id", id}});
      bed_.call("inject.stop", {{"id", id}});
    };
    if (aa_) finish();
    row.blast = blast(bed_, 0.5, bed_.daemon_pid());
    if (!aa_) finish();
  }

  // iptables inserting the floor rule first in its chain ("-I") or deleting
  // it ("-D"), in mangle where the daemon's chains are.
  std::vector<std::string> floor_iptables(const char* op) const {
    std::vector<std::string> argv = {"iptables", "-w", "5", "-t", "mangle", op};
    if (std::string(op) == "-I") {
      argv.push_back(floor_rule_.front());
      argv.push_back("1");
      argv.insert(argv.end(), floor_rule_.begin() + 1, floor_rule_.end());
    } else {
      argv.insert(argv.end(), floor_rule_.begin(), floor_rule_.end());
    }
    return argv;
  }

  InjectorTestbed& bed_;
  const std::string dir_;
  const std::string cpu_latency_;
  const bool aa_;
  nabla::common::NetNamespace& host_;
  const std::vector<std::string> floor_rule_;
  Blast base_;
  Blast floor_;
  NablaRow zero_;
  NablaRow one_ms_;
  std::vector<double> floor_ratio_;
  std::vector<double> zero_ratio_;
  std::vector<double> zero_of_floor_;
  std::vector<double> one_ratio_;
};

// Throughput rows for one rule placement. "out": the daemon runs on the
// sending host and queues the sender's OUTPUT; the verdict then carries each
// packet through the veth and the receiving host's whole stack inside the
// daemon's sendmsg (the sender's CPU did all of that in the baseline). "in":
// the daemon runs on the receiving host and queues its INPUT; the veth and
// routing stay on the sender's CPU as in the baseline, and the verdict
// carries only the local delivery. The four configurations are interleaved
// in 0.5 s slices, round after round, and the ratio taken per round (median
// over rounds), so a burst of load from elsewhere hits all four alike. The
// daemon shares CPU 1 with the receiver.
void throughput_rows(InjectorTestbed& bed, const std::string& dir, int rounds,
                     const std::vector<std::string>& daemon_flags, const std::string& cpu_latency,
                     bool aa) {
  bed.start_daemon(daemon_flags,
                   dir == "in" ? InjectorTestbed::Host::kReceiver : InjectorTestbed::Host::kSender);
  pin_process(bed.daemon_pid(), 1);
  ThroughputRows rows(bed, dir, cpu_latency, aa);
  for (int r = 0; r < rounds; ++r) rows.run_round(r);
  bed.stop_daemon();
  rows.print();
}

// Does holding a CPU latency limit change the throughput of what runs
// after it is released? No rule anywhere: each round blasts after (a) no
// hold, (b) a 5 ms hold and (c) a 500 ms hold of a 0 us limit, all released
// before the blast, in rotating order. Ratios are against (a).
void qos_carryover(InjectorTestbed& bed, int rounds) {
  std::vector<double> brief_ratio;
  std::vector<double> long_ratio;
  for (int r = 0; r < rounds; ++r) {
    double pps[3] = {};
    for (int k = 0; k < 3; ++k) {
      const int config = (k + r) % 3;
      if (config > 0) {
        nabla::common::CpuLatencyRequest hold(0);
        ::usleep(config == 1 ? 5'000 : 500'000);
      }
      pps[config] = blast(bed, 0.5, 0).received_pps;
    }
    brief_ratio.push_back(pps[1] / pps[0]);
    long_ratio.push_back(pps[2] / pps[0]);
  }
  std::printf(
      "CPU latency limit carry-over (no rule; blast after a released hold / after none), %d "
      "rounds: 5 ms hold %s; 500 ms hold %s\n",
      rounds, spread(brief_ratio).c_str(), spread(long_ratio).c_str());
}

std::vector<std::string> comma_list(const std::string& text) {
  std::vector<std::string> items;
  std::stringstream list(text);
  for (std::string item; std::getline(list, item, ',');) items.push_back(item);
  return items;
}

// The bench's flags (see the usage at the top).
struct BenchFlags {
  double seconds = 2.0;
  std::vector<int> spins = {50};
  int throughput_rt = 0;  // the throughput daemon's --rt-priority
  int accuracy_rt = 10;   // the accuracy daemons' --rt-priority (the testbed default)
  int busy_poll_us = 0;
  std::string throughput_cpu_latency = "0";  // the throughput daemon's --cpu-latency-us
  bool aa = false;                           // throughput rows without their rules (a check)
  bool qos_check = false;
  bool wave_check = false;  // only the wave check (--wave-check 1)
  std::vector<std::string> throughput_dirs = {"out", "in"};
};

// Reads "--flag value" pairs; --pin sets g_pin.
BenchFlags parse_flags(int argc, char** argv) {
  BenchFlags f;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--seconds") f.seconds = std::stod(argv[i + 1]);
    if (flag == "--spin-us") {  // one value or a comma list: one accuracy row set each
      f.spins.clear();
      for (const auto& item : comma_list(argv[i + 1])) f.spins.push_back(std::stoi(item));
    }
    if (flag == "--pin") g_pin = std::stoi(argv[i + 1]);
    if (flag == "--busy-poll-us") f.busy_poll_us = std::stoi(argv[i + 1]);
    if (flag == "--throughput-cpu-latency") f.throughput_cpu_latency = argv[i + 1];
    if (flag == "--aa") f.aa = std::stoi(argv[i + 1]) != 0;
    if (flag == "--qos-carryover") f.qos_check = std::stoi(argv[i + 1]) != 0;
    if (flag == "--wave-check") f.wave_check = std::stoi(argv[i + 1]) != 0;
    if (flag == "--throughput-rt") f.throughput_rt = std::stoi(argv[i + 1]);
    if (flag == "--accuracy-rt") f.accuracy_rt = std::stoi(argv[i + 1]);
    if (flag == "--throughput-dir") f.throughput_dirs = comma_list(argv[i + 1]);  // out, in or both
  }
  return f;
}

// The throughput daemon runs as the daemon does by default: normal
// scheduling. Under SCHED_FIFO (--throughput-rt P) it takes all of CPU 1
// once the sender outruns it, starving the receiver that shares the core:
// measured 0.25 of the baseline on a quiet VM, with receive-side drops.
void throughput_section(InjectorTestbed& bed, const BenchFlags& f) {
  const int rounds = std::max(8, static_cast<int>(std::lround(f.seconds * 4)) / 4 * 4);
  std::printf(
      "throughput (one sender thread, 64-byte UDP, %d rounds of 0.5 s per configuration; "
      "ratio of no rule, median over rounds; daemon --busy-poll-us %d --rt-priority %d "
      "--cpu-latency-us %s)\n",
      rounds, f.busy_poll_us, f.throughput_rt, f.throughput_cpu_latency.c_str());
  for (const auto& dir : f.throughput_dirs) {
    throughput_rows(
        bed, dir, rounds,
        {"--cpu-latency-us", f.throughput_cpu_latency, "--busy-poll-us",
         std::to_string(f.busy_poll_us), "--rt-priority", std::to_string(f.throughput_rt)},
        f.throughput_cpu_latency, f.aa);
  }
}

// Accuracy with the daemon on the sending host (direction out): no spin,
// self-calibrated, then each fixed spin asked for. Returns the path's
// median one-way delay with no rule, which the rows subtract.
int64_t accuracy_out_section(InjectorTestbed& bed, const BenchFlags& f) {
  // The path itself (veth, both stacks) with no rule, same probes: its
  // median is subtracted from the injected runs' one-way delays.
  const auto path = nabla::testbed::run_udp_probes(bed, 9000, 10'000, 10'000.0);
  const int64_t base_ns = nabla::testbed::delay_percentile(path, 0.5);
  std::printf(
      "accuracy, 1 ms constant delay, %.1f s per rate; error = one-way delay - 1 ms - path "
      "median (%.1f us, p99 %.1f us with no rule); targets: median <= 10 us, p99 <= 100 us\n",
      f.seconds, base_ns / 1e3, nabla::testbed::delay_percentile(path, 0.99) / 1e3);
  const std::string rt = std::to_string(f.accuracy_rt);
  bed.start_daemon({"--cpu-latency-us", "0", "--spin-us", "0", "--rt-priority", rt});
  accuracy_rows(bed, "nabla, no spin", f.seconds, base_ns);
  bed.stop_daemon();
  // The default: the lead is self-calibrated from the loop's own wake-ups.
  bed.start_daemon({"--cpu-latency-us", "0", "--rt-priority", rt});
  accuracy_rows(bed, "nabla, self-calibrated", f.seconds, base_ns);
  print_timer(bed);
  bed.stop_daemon();
  for (int spin : f.spins) {
    if (spin <= 0) continue;
    bed.start_daemon(
        {"--cpu-latency-us", "0", "--spin-us", std::to_string(spin), "--rt-priority", rt});
    const std::string who = "nabla, spin " + std::to_string(spin) + " us";
    accuracy_rows(bed, who.c_str(), f.seconds, base_ns);
    bed.stop_daemon();
  }
  return base_ns;
}

// The same rows with the daemon on the receiving host (direction in):
// there the kernel stamps each packet on arrival (NFQA_TIMESTAMP), and the
// delay counts from that stamp, so a late wake-up of the loop for an
// arrival does not add to it. Locally sent packets (direction out) carry
// no stamp; their delay counts from the daemon's receive call. The
// receiver's kernel stamp comes before INPUT, so these probes are timed
// after recvmsg, and their path median is measured the same way. The
// probes' receiving thread then runs one SCHED_FIFO level above the
// daemon: below it (as in the tests), it waited whenever the daemon
// polled on its CPU, and the 50k row measured that wait (median 80-480
// us, p99 2-60 ms) rather than the release.
void accuracy_in_section(InjectorTestbed& bed, const BenchFlags& f, int spin_us) {
  bed.set_probe_receive_call_stamps(true);
  bed.set_probe_receiver_priority(f.accuracy_rt + 1);
  const auto user_path = nabla::testbed::run_udp_probes(bed, 9000, 10'000, 10'000.0);
  const int64_t user_base_ns = nabla::testbed::delay_percentile(user_path, 0.5);
  std::printf(
      "  direction in (daemon on the receiving host), probes timed after recvmsg by a FIFO %d "
      "receiver: path median %.1f us, p99 %.1f us with no rule\n",
      f.accuracy_rt + 1, user_base_ns / 1e3,
      nabla::testbed::delay_percentile(user_path, 0.99) / 1e3);
  const std::string rt = std::to_string(f.accuracy_rt);
  bed.start_daemon(
      {"--cpu-latency-us", "0", "--spin-us", std::to_string(spin_us), "--rt-priority", rt},
      InjectorTestbed::Host::kReceiver);
  const std::string who = "nabla in, spin " + std::to_string(spin_us) + " us";
  accuracy_rows(bed, who.c_str(), f.seconds, user_base_ns, "in");
  bed.stop_daemon();
  bed.start_daemon({"--cpu-latency-us", "0", "--rt-priority", rt},
                   InjectorTestbed::Host::kReceiver);
  accuracy_rows(bed, "nabla in, self-calibrated", f.seconds, user_base_ns, "in");
  print_timer(bed);
  bed.stop_daemon();
  bed.set_probe_receive_call_stamps(false);
  bed.set_probe_receiver_priority(5);
}

// The naive delayer: same queue discipline, sleeps 1 ms per packet inline.
void naive_section(InjectorTestbed& bed, int64_t base_ns) {
  bed.sender().run_checked({"iptables", "-w", "5", "-t", "mangle", "-A", "OUTPUT", "-p", "udp",
                            "--dport", "9000", "-j", "NFQUEUE", "--queue-num", "7",
                            "--queue-bypass"});
  {
    nabla::common::ChildProcess naive({g_self, "--naive", "7", "1000"}, &bed.sender());
    ::usleep(200'000);
    // One rate only: at 1 ms per packet it saturates at 1k pps anyway.
    print_accuracy("naive (sleeps)", 10'000.0, accuracy(bed, 10'000.0, 0.5, 1'000'000, base_ns));
  }
  bed.sender().run({"iptables", "-w", "5", "-t", "mangle", "-D", "OUTPUT", "-p", "udp", "--dport",
                    "9000", "-j", "NFQUEUE", "--queue-num", "7", "--queue-bypass"});
}

}  // namespace

// The gradient method's own question of the instrument: with a square
// wave on the link, does the delay a packet really gains at the receiver
// step by what the daemon reports as Δl = halves.high.mean − halves.low.mean?
// On direction out the daemon times a packet from its own read, so a wait
// in the queue before that read is not in its figure; if that wait (or
// anything else) differed between the halves, Δl would be off and every
// gradient with it. Probes at a campaign-like rate; each probe is put in the
// half the wave was in when it was sent, with the wave's origin fitted to
// the probes' delays (it starts when inject.start is handled). The daemon
// runs with its defaults (self-calibrated spin, normal scheduling), as the
// demo starts it; each row asks for release "spin" (the default) or
// "sleep" (what campaigns ask for).
struct WaveCheck {
  double receiver_step_ns = 0, daemon_step_ns = 0;
  double receiver_high_ns = 0, receiver_low_ns = 0;
  size_t high = 0, low = 0;
};

WaveCheck wave_check(InjectorTestbed& bed, const char* release, double rate, double seconds,
                     int64_t amplitude_ns, int64_t period_ns, int64_t base_ns) {
  const int64_t cycles = static_cast<int64_t>(seconds * 1e9 / static_cast<double>(period_ns)) + 4;
  const auto id = bed.call("inject.start", {{"link", kProbeLink},
                                            {"direction", "out"},
                                            {"delay",
                                             {{"kind", "square"},
                                              {"amplitude", std::to_string(amplitude_ns) + "ns"},
                                              {"period", std::to_string(period_ns) + "ns"},
                                              {"cycles", cycles}}},
                                            {"lease_s", 600},
                                            {"release", release}})
                      .at("id");
  const auto probes =
      nabla::testbed::run_udp_probes(bed, 9000, static_cast<int>(rate * seconds), rate);
  const auto stats = bed.call("inject.stats", {{"id", id}});
  bed.call("inject.stop", {{"id", id}});
  // The origin: the offset (1 ms steps) whose high halves hold the most
  // probes delayed by at least half the amplitude, and whose low halves
  // the most below it.
  const int64_t t0 = probes.empty() ? 0 : probes.front().send_ns;
  auto in_high = [&](int64_t send_ns, int64_t origin) {
    const int64_t t = ((send_ns - t0 - origin) % period_ns + period_ns) % period_ns;
    return t < period_ns / 2;
  };
  int64_t best_origin = 0;
  long best_score = -1;
  for (int64_t origin = 0; origin < period_ns; origin += 1'000'000) {
    long score = 0;
    for (const auto& p : probes) {
      if (p.copies == 0) continue;
      score += in_high(p.send_ns, origin) == (p.delay_ns - base_ns >= amplitude_ns / 2);
    }
    if (score > best_score) best_score = score, best_origin = origin;
  }
  WaveCheck w;
  double sum_high = 0, sum_low = 0;
  for (const auto& p : probes) {
    if (p.copies == 0) continue;
    if (in_high(p.send_ns, best_origin)) {
      sum_high += static_cast<double>(p.delay_ns), ++w.high;
    } else {
      sum_low += static_cast<double>(p.delay_ns), ++w.low;
    }
  }
  w.receiver_high_ns = w.high ? sum_high / static_cast<double>(w.high) : 0;
  w.receiver_low_ns = w.low ? sum_low / static_cast<double>(w.low) : 0;
  w.receiver_step_ns = w.receiver_high_ns - w.receiver_low_ns;
  w.daemon_step_ns = stats.at("halves").at("high").at("mean").get<double>() -
                     stats.at("halves").at("low").at("mean").get<double>();
  return w;
}

void wave_check_section(InjectorTestbed& bed, double seconds) {
  const auto path = nabla::testbed::run_udp_probes(bed, 9000, 5'000, 5'000.0);
  const int64_t base_ns = nabla::testbed::delay_percentile(path, 0.5);
  std::printf(
      "wave check: square wave on direction out, period 240 ms, %.0f s per row; step = mean "
      "one-way delay of probes sent in the high half - in the low half (receiver), against the "
      "daemon's halves.high.mean - halves.low.mean; daemon with its defaults\n",
      seconds);
  bed.start_daemon({"--rt-priority", "0"});
  for (const char* release : {"spin", "sleep"}) {
    for (int64_t amplitude : {2'000'000L, 500'000L}) {
      for (double rate : {1'200.0, 4'800.0}) {
        const WaveCheck w =
            wave_check(bed, release, rate, seconds, amplitude, 240'000'000, base_ns);
        std::printf(
            "  release %-5s A %4.1f ms %5.0f pps: receiver step %8.1f us (high %8.1f low %7.1f, "
            "%zu/%zu probes), daemon step %8.1f us, receiver/daemon %.4f\n",
            release, amplitude / 1e6, rate, w.receiver_step_ns / 1e3, w.receiver_high_ns / 1e3,
            w.receiver_low_ns / 1e3, w.high, w.low, w.daemon_step_ns / 1e3,
            w.daemon_step_ns > 0 ? w.receiver_step_ns / w.daemon_step_ns : 0.0);
        std::fflush(stdout);
      }
    }
    print_timer(bed);
  }
  bed.stop_daemon();
}

int main(int argc, char** argv) {
  g_self = argv[0];
  if (argc == 5 && std::string(argv[1]) == "--floor") {
    return run_floor(static_cast<uint16_t>(std::stoi(argv[2])), std::string(argv[3]) == "1",
                     argv[4]);
  }
  if (argc == 4 && std::string(argv[1]) == "--naive") {
    return run_naive(static_cast<uint16_t>(std::stoi(argv[2])), std::stoll(argv[3]));
  }
  const BenchFlags f = parse_flags(argc, argv);
  try {
    nabla::common::parse_cpu_latency_limit(f.throughput_cpu_latency);
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "injector_bench: --throughput-cpu-latency: %s\n", e.what());
    return 2;
  }
  if (::geteuid() != 0) {
    std::fprintf(stderr, "injector_bench: needs root (namespaces, NFQUEUE)\n");
    return 1;
  }
  // Every daemon here runs --cpu-latency-us 0 (the precision configuration;
  // the daemon's default is off): it holds a 0 us PM QoS CPU latency limit
  // while an injection is active and not otherwise, so the no-rule
  // baseline runs as the machine runs without nabla: idle CPUs halt. With
  // NABLA_BENCH_QOS_ALL=1 the bench holds the same limit for every row
  // instead. That is NOT the fair baseline: on this VM a polling idle vCPU
  // slows the sender on the other vCPU (measured baseline 300-350k pps with
  // the limit against 350-420k without), which flatters the ratios.
  std::optional<nabla::common::CpuLatencyRequest> cpu_latency;
  if (std::getenv("NABLA_BENCH_QOS_ALL")) cpu_latency.emplace(0);
  std::printf("CPU latency limit: %s\n",
              !cpu_latency ? "held by the daemon while it injects, none for the no-rule baseline"
              : cpu_latency->held()
                  ? "0 us held by the bench for every row (NABLA_BENCH_QOS_ALL; flatters ratios)"
                  : ("NABLA_BENCH_QOS_ALL: not held: " + cpu_latency->error()).c_str());
  InjectorTestbed bed;
  if (f.qos_check) {
    qos_carryover(bed, 9);
    return 0;
  }
  if (f.wave_check) {
    wave_check_section(bed, std::max(f.seconds, 10.0));
    return 0;
  }
  throughput_section(bed, f);
  const int64_t base_ns = accuracy_out_section(bed, f);
  if (!f.spins.empty() && f.spins.front() > 0) accuracy_in_section(bed, f, f.spins.front());
  if (f.busy_poll_us > 0) {
    const int spin_us = f.spins.empty() ? 0 : f.spins.front();
    bed.start_daemon({"--cpu-latency-us", "0", "--spin-us", std::to_string(spin_us),
                      "--busy-poll-us", std::to_string(f.busy_poll_us)});
    const std::string who =
        "nabla, spin " + std::to_string(spin_us) + " poll " + std::to_string(f.busy_poll_us);
    accuracy_rows(bed, who.c_str(), f.seconds, base_ns);
    bed.stop_daemon();
  }
  naive_section(bed, base_ns);
  return 0;
}
