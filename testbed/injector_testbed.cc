#include "nabla/testbed/injector_testbed.hh"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <ctime>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "nabla/common/clock.hh"
#include "nabla/common/instance_lock.hh"
#include "nabla/common/local_keys.hh"
#include "nabla/common/rpc.hh"
#include "nabla/common/rpc_in_namespace.hh"

namespace nabla::testbed {

namespace {

// seq (4) | monotonic send stamp (8) | realtime send stamp (8) | 0x5a filler
constexpr size_t kProbeHeaderBytes = 20;

sockaddr_in address(const char* ip, uint16_t port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  ::inet_pton(AF_INET, ip, &a.sin_addr);
  return a;
}

}  // namespace

InjectorTestbed::InjectorTestbed() {
  // Namespaces of earlier runs that were killed (creator pid gone).
  common::sweep_stale_namespaces();
  snd_ = std::make_unique<common::NetNamespace>("snd");
  daemon_ns_ = snd_.get();
  rcv_ = std::make_unique<common::NetNamespace>("rcv");
  veth_ = std::make_unique<common::VethPair>(*snd_, "nb-snd0", *rcv_, "nb-rcv0");
  snd_->add_address("nb-snd0", std::string(kSenderIp) + "/24");
  rcv_->add_address("nb-rcv0", std::string(kReceiverIp) + "/24");
  snd_->set_up("nb-snd0");
  rcv_->set_up("nb-rcv0");
  // IPv6 too (ULA, inside the namespaces only); nodad: usable at once.
  snd_->run_checked(
      {"ip", "-6", "addr", "add", std::string(kSenderIp6) + "/64", "dev", "nb-snd0", "nodad"});
  rcv_->run_checked(
      {"ip", "-6", "addr", "add", std::string(kReceiverIp6) + "/64", "dev", "nb-rcv0", "nodad"});
  stamp_keeper_ = rcv_->socket(AF_INET, SOCK_DGRAM, 0);
  const int on = 1;
  ::setsockopt(stamp_keeper_.get(), SOL_SOCKET, SO_TIMESTAMPNS, &on, sizeof on);
  log_path_ = "/tmp/nabla-injectd-test-" + std::to_string(::getpid()) + ".log";
}

InjectorTestbed::~InjectorTestbed() {
  daemon_.reset();  // SIGTERM: the daemon removes its rules
  veth_.reset();
  rcv_.reset();
  snd_.reset();  // whatever rules remain vanish with the namespace
  std::remove(log_path_.c_str());
}

void InjectorTestbed::start_daemon(const std::vector<std::string>& extra_flags, Host host) {
  // --rt-priority 10 unless the caller gives its own: the packet loop must
  // not be the thing that is late on a loaded 2-core CI machine (the probe
  // threads run at a lower RT priority).
  std::vector<std::string> argv = {NABLA_INJECTD_PATH, "--listen", "127.0.0.1:7311", "--log-level",
                                   "info"};
  if (std::find(extra_flags.begin(), extra_flags.end(), "--rt-priority") == extra_flags.end()) {
    argv.insert(argv.end(), {"--rt-priority", "10"});
  }
  argv.insert(argv.end(), extra_flags.begin(), extra_flags.end());
  daemon_ns_ = host == Host::kSender ? snd_.get() : rcv_.get();
  daemon_ = std::make_unique<common::ChildProcess>(argv, daemon_ns_, log_path_);
  const int64_t deadline = common::monotonic_ns() + 5'000'000'000;
  for (;;) {
    try {
      call("daemon.info", nlohmann::json::object());
      return;
    } catch (const std::exception& e) {
      if (!daemon_->running()) throw std::runtime_error("nabla-injectd exited: " + daemon_log());
      if (common::monotonic_ns() > deadline) {
        throw std::runtime_error(std::string("nabla-injectd not answering: ") + e.what());
      }
      ::usleep(20'000);
    }
  }
}

void InjectorTestbed::kill_daemon_hard() {
  daemon_->signal(SIGKILL);
  daemon_->wait(std::chrono::seconds(5));
  daemon_.reset();
  // A killed daemon leaves its run key file and its (no longer held) lock
  // file in /run/nabla, named after the daemon's namespace; the test
  // removes them as it removes the namespace.
  const common::FileDescriptor ns = daemon_ns_->open();
  std::thread helper([&] {
    if (::setns(ns.get(), CLONE_NEWNET) == 0) {
      ::unlink(common::run_key_path({}, common::kInjectdKeyName, 7311).c_str());
      ::unlink(common::InstanceLock::path_for(common::kInjectdKeyName, "/proc/thread-self/ns/net")
                   .c_str());
    }
  });
  helper.join();
}

void InjectorTestbed::stop_daemon() {
  daemon_.reset();
}

pid_t InjectorTestbed::daemon_pid() const {
  return daemon_ ? daemon_->pid() : -1;
}

std::string InjectorTestbed::daemon_log() const {
  std::ifstream in(log_path_);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

nlohmann::json InjectorTestbed::call(const std::string& method, const nlohmann::json& params) {
  // The daemon listens on its namespace's loopback. Without a client key,
  // the daemon's own key from its run file, as the nabla CLI finds it.
  const auto key =
      key_ ? common::RpcClient::KeySource([this] { return *key_; })
           : common::client_key_source(std::nullopt, common::kInjectdKeyName, "127.0.0.1", 7311);
  return common::call_in_namespace(*daemon_ns_, "127.0.0.1", 7311, common::kInjectdKeyName, key,
                                   method, params);
}

std::vector<std::string> InjectorTestbed::nabla_rules() {
  std::vector<std::string> out;
  const auto r = daemon_ns_->run({"iptables-save"});
  std::istringstream lines(r.stdout_text);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.find("NABLA") != std::string::npos || line.find("nabla:") != std::string::npos) {
      out.push_back(line);
    }
  }
  return out;
}

namespace {

// Where the probes go: receiver:port in the probe's family.
struct ProbeTarget {
  int domain = AF_INET;
  sockaddr_storage storage{};
  socklen_t length = 0;
  const sockaddr* address() const { return reinterpret_cast<const sockaddr*>(&storage); }
};

ProbeTarget probe_target(ProbeFamily family, uint16_t port) {
  ProbeTarget t;
  if (family == ProbeFamily::kIpv6) {
    t.domain = AF_INET6;
    auto* a = reinterpret_cast<sockaddr_in6*>(&t.storage);
    a->sin6_family = AF_INET6;
    a->sin6_port = htons(port);
    ::inet_pton(AF_INET6, kReceiverIp6, &a->sin6_addr);
    t.length = sizeof(sockaddr_in6);
  } else {
    *reinterpret_cast<sockaddr_in*>(&t.storage) = address(kReceiverIp, port);
    t.length = sizeof(sockaddr_in);
  }
  return t;
}

// The receiving socket in the receiver namespace, bound to the target. With
// kernel receive stamps (CLOCK_REALTIME, taken when the receiver's stack
// gets the datagram) the probe measures the path, not how late the
// receiving thread woke up.
common::FileDescriptor open_probe_receiver(InjectorTestbed& bed, const ProbeTarget& to) {
  common::FileDescriptor rx = bed.receiver().socket(to.domain, SOCK_DGRAM, 0);
  if (::bind(rx.get(), to.address(), to.length) != 0) throw std::runtime_error("bind receiver");
  int big = 4 << 20;
  ::setsockopt(rx.get(), SOL_SOCKET, SO_RCVBUFFORCE, &big, sizeof big);
  const int on = 1;
  if (!bed.probe_receive_call_stamps()) {
    ::setsockopt(rx.get(), SOL_SOCKET, SO_TIMESTAMPNS, &on, sizeof on);
  }
  return rx;
}

// Runs the calling thread at a SCHED_FIFO priority while it lives, then at
// what it had before.
class FifoPriority {
 public:
  explicit FifoPriority(int priority) {
    ::pthread_getschedparam(::pthread_self(), &old_policy_, &old_param_);
    sched_param rt{};
    rt.sched_priority = priority;
    ::pthread_setschedparam(::pthread_self(), SCHED_FIFO, &rt);
  }
  ~FifoPriority() { ::pthread_setschedparam(::pthread_self(), old_policy_, &old_param_); }
  FifoPriority(const FifoPriority&) = delete;
  FifoPriority& operator=(const FifoPriority&) = delete;

 private:
  int old_policy_ = 0;
  sched_param old_param_{};
};

// The one-way delay of a datagram: the kernel's receive stamp minus the
// sender's realtime stamp, or without a kernel stamp the receiving thread's
// monotonic time minus the sender's monotonic stamp.
int64_t datagram_delay(msghdr& msg, int64_t received_mono, int64_t sent_mono, int64_t sent_real) {
  int64_t delay = received_mono - sent_mono;
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPNS) {
      timespec ts{};
      std::memcpy(&ts, CMSG_DATA(c), sizeof ts);
      const int64_t stamp = ts.tv_sec * 1'000'000'000LL + ts.tv_nsec;
      if (stamp != 0) delay = stamp - sent_real;
    }
  }
  return delay;
}

// Counts one received datagram of `got` bytes in `run`: its probe's copies,
// first delay and filler, or an unknown sequence number.
void record_datagram(const std::vector<uint8_t>& buf, ssize_t got, msghdr& msg,
                     int64_t received_mono, ProbeRun& run) {
  if (got < static_cast<ssize_t>(kProbeHeaderBytes)) return;
  uint32_t seq = 0;
  int64_t sent_mono = 0;
  int64_t sent_real = 0;
  std::memcpy(&seq, buf.data(), 4);
  std::memcpy(&sent_mono, buf.data() + 4, 8);
  std::memcpy(&sent_real, buf.data() + 12, 8);
  if (seq >= run.probes.size()) {
    ++run.unknown_datagrams;
    return;
  }
  auto& r = run.probes[seq];
  const int64_t delay = datagram_delay(msg, received_mono, sent_mono, sent_real);
  if (r.copies++ == 0) r.delay_ns = delay;
  for (ssize_t i = static_cast<ssize_t>(kProbeHeaderBytes); i < got; ++i) {
    r.intact = r.intact && buf[static_cast<size_t>(i)] == 0x5a;
  }
}

// Reads every datagram queued on `rx` into `run`: one poll per datagram
// falls behind at 50k/s.
void drain_queued(int rx, std::vector<uint8_t>& buf, ProbeRun& run) {
  alignas(cmsghdr) char control[256];
  for (;;) {
    iovec iov{buf.data(), buf.size()};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    const ssize_t got = ::recvmsg(rx, &msg, MSG_DONTWAIT);
    if (got <= 0) return;
    record_datagram(buf, got, msg, common::monotonic_ns(), run);
  }
}

// When the receiver may stop: the sender sets stop_at (its last send plus
// the drain time), then done.
struct SendingDone {
  std::atomic<bool> done{false};
  std::atomic<int64_t> stop_at{0};
};

// The receiving thread's loop: records datagrams into `run` until the
// sender is done and the drain time has passed with nothing queued.
void receive_probes(int rx, int priority, const SendingDone& sending, ProbeRun& run) {
  // Real-time priority so that the measuring thread is not the thing that
  // is late on a loaded 2-core machine.
  sched_param param{};
  param.sched_priority = priority;
  ::pthread_setschedparam(::pthread_self(), SCHED_FIFO, &param);
  std::vector<uint8_t> buf(65536);
  for (;;) {
    pollfd p{rx, POLLIN, 0};
    const int n = ::poll(&p, 1, 20);
    const int64_t now = common::monotonic_ns();
    if (n > 0) {
      drain_queued(rx, buf, run);
      continue;
    }
    if (sending.done && now >= sending.stop_at) return;
  }
}

// Sleeps until the monotonic time `due_ns`, if it is still ahead.
void sleep_until(int64_t due_ns) {
  if (due_ns <= common::monotonic_ns()) return;
  timespec ts{due_ns / 1'000'000'000, due_ns % 1'000'000'000};
  while (::clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) == EINTR) {
  }
}

// Sends the plan's probes on `tx`, stamping each with its sequence number
// and both clocks right before sendto, and notes each send in `probes`.
void send_probes(int tx, const ProbeTarget& to, const ProbePlan& plan, size_t size,
                 std::vector<ProbeResult>& probes) {
  std::vector<uint8_t> payload(size, 0x5a);
  // The sender too: stamps must be taken right before sendto.
  const FifoPriority rt(5);
  // Open loop, without spinning: the sender sleeps to each due time (timer
  // slack 1 ns) and sends whatever is due when it wakes. A spinning SCHED_FIFO
  // sender would hog a core for the whole run, get RT-throttled (50 ms per
  // second) and starve the injector on a 2-core machine. Stamps are taken
  // right before sendto, so a late wake-up shifts a send, not a measurement.
  ::prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
  const int64_t start = common::monotonic_ns();
  const double interval_ns = 1e9 / plan.rate_pps;
  for (int i = 0; i < plan.count; ++i) {
    sleep_until(start + static_cast<int64_t>(std::llround(i * interval_ns)));
    const auto seq = static_cast<uint32_t>(i);
    timespec real{};
    ::clock_gettime(CLOCK_REALTIME, &real);
    const int64_t now = common::monotonic_ns();
    const int64_t now_real = real.tv_sec * 1'000'000'000LL + real.tv_nsec;
    std::memcpy(payload.data(), &seq, 4);
    std::memcpy(payload.data() + 4, &now, 8);
    std::memcpy(payload.data() + 12, &now_real, 8);
    probes[static_cast<size_t>(i)].seq = seq;
    probes[static_cast<size_t>(i)].send_ns = now;
    ::sendto(tx, payload.data(), payload.size(), 0, to.address(), to.length);
  }
}

}  // namespace

ProbeRun send_udp_probes(InjectorTestbed& bed, const ProbePlan& plan) {
  const size_t size = std::max<size_t>(plan.size, kProbeHeaderBytes + 4);
  ProbeRun run;
  run.probes.resize(static_cast<size_t>(plan.count));
  const ProbeTarget to = probe_target(plan.family, plan.port);
  const common::FileDescriptor rx = open_probe_receiver(bed, to);
  const common::FileDescriptor tx = bed.sender().socket(to.domain, SOCK_DGRAM, 0);
  // The sender writes each probe's seq and send_ns, the receiver its other
  // fields, and only the receiver counts unknown datagrams.
  SendingDone sending;
  std::thread receiver(receive_probes, rx.get(), bed.probe_receiver_priority(), std::cref(sending),
                       std::ref(run));
  send_probes(tx.get(), to, plan, size, run.probes);
  sending.stop_at = common::monotonic_ns() + plan.drain.count() * 1'000'000;
  sending.done = true;
  receiver.join();
  return run;
}

std::vector<ProbeResult> run_udp_probes(InjectorTestbed& bed, uint16_t port, int count,
                                        double rate_pps, size_t size,
                                        std::chrono::milliseconds drain) {
  return run_udp_probes(bed, ProbeFamily::kIpv4, port, count, rate_pps, size, drain);
}

std::vector<ProbeResult> run_udp_probes(InjectorTestbed& bed, ProbeFamily family, uint16_t port,
                                        int count, double rate_pps, size_t size,
                                        std::chrono::milliseconds drain) {
  return send_udp_probes(bed, {family, port, count, rate_pps, size, drain}).probes;
}

int64_t delay_percentile(const std::vector<ProbeResult>& probes, double q) {
  std::vector<int64_t> d;
  for (const auto& p : probes) {
    if (p.delay_ns >= 0) d.push_back(p.delay_ns);
  }
  if (d.empty()) return -1;
  std::sort(d.begin(), d.end());
  const size_t rank = std::max<size_t>(1, static_cast<size_t>(std::ceil(q * d.size())));
  return d[std::min(rank, d.size()) - 1];
}

double delay_mean(const std::vector<ProbeResult>& probes) {
  double sum = 0;
  size_t n = 0;
  for (const auto& p : probes) {
    if (p.delay_ns >= 0) {
      sum += static_cast<double>(p.delay_ns);
      ++n;
    }
  }
  return n == 0 ? 0.0 : sum / static_cast<double>(n);
}

size_t lost(const std::vector<ProbeResult>& probes) {
  return static_cast<size_t>(
      std::count_if(probes.begin(), probes.end(), [](const auto& p) { return p.copies == 0; }));
}

}  // namespace nabla::testbed
