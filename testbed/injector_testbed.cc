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

thread_local size_t g_unknown_datagrams = 0;

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

std::vector<ProbeResult> run_udp_probes(InjectorTestbed& bed, uint16_t port, int count,
                                        double rate_pps, size_t size,
                                        std::chrono::milliseconds drain) {
  return run_udp_probes(bed, ProbeFamily::kIpv4, port, count, rate_pps, size, drain);
}

std::vector<ProbeResult> run_udp_probes(InjectorTestbed& bed, ProbeFamily family, uint16_t port,
                                        int count, double rate_pps, size_t size,
                                        std::chrono::milliseconds drain) {
  size = std::max<size_t>(size, kProbeHeaderBytes + 4);
  std::vector<ProbeResult> results(static_cast<size_t>(count));
  const bool v6 = family == ProbeFamily::kIpv6;
  const int domain = v6 ? AF_INET6 : AF_INET;
  common::FileDescriptor rx = bed.receiver().socket(domain, SOCK_DGRAM, 0);
  sockaddr_storage to_storage{};
  socklen_t to_length = 0;
  if (v6) {
    auto* a = reinterpret_cast<sockaddr_in6*>(&to_storage);
    a->sin6_family = AF_INET6;
    a->sin6_port = htons(port);
    ::inet_pton(AF_INET6, kReceiverIp6, &a->sin6_addr);
    to_length = sizeof(sockaddr_in6);
  } else {
    *reinterpret_cast<sockaddr_in*>(&to_storage) = address(kReceiverIp, port);
    to_length = sizeof(sockaddr_in);
  }
  const auto* to = reinterpret_cast<const sockaddr*>(&to_storage);
  if (::bind(rx.get(), to, to_length) != 0) throw std::runtime_error("bind receiver");
  int big = 4 << 20;
  ::setsockopt(rx.get(), SOL_SOCKET, SO_RCVBUFFORCE, &big, sizeof big);
  common::FileDescriptor tx = bed.sender().socket(domain, SOCK_DGRAM, 0);
  std::atomic<bool> sending_done{false};
  std::atomic<int64_t> stop_at{0};
  size_t unknown = 0;
  // Kernel receive stamps (CLOCK_REALTIME, taken when the receiver's stack
  // gets the datagram): the probe measures the path, not how late the
  // receiving thread woke up. The sender stamps both clocks; a datagram that
  // comes without a kernel stamp falls back to the monotonic pair.
  const int on = 1;
  if (!bed.probe_receive_call_stamps()) {
    ::setsockopt(rx.get(), SOL_SOCKET, SO_TIMESTAMPNS, &on, sizeof on);
  }
  std::thread receiver([&] {
    // Real-time priority so that the measuring thread is not the thing that
    // is late on a loaded 2-core machine.
    sched_param param{};
    param.sched_priority = bed.probe_receiver_priority();
    ::pthread_setschedparam(::pthread_self(), SCHED_FIFO, &param);
    std::vector<uint8_t> buf(65536);
    alignas(cmsghdr) char control[256];
    for (;;) {
      pollfd p{rx.get(), POLLIN, 0};
      const int n = ::poll(&p, 1, 20);
      const int64_t now = common::monotonic_ns();
      if (n > 0) {
        // Drain everything queued: one poll per datagram falls behind at 50k/s.
        for (;;) {
          iovec iov{buf.data(), buf.size()};
          msghdr msg{};
          msg.msg_iov = &iov;
          msg.msg_iovlen = 1;
          msg.msg_control = control;
          msg.msg_controllen = sizeof control;
          const ssize_t got = ::recvmsg(rx.get(), &msg, MSG_DONTWAIT);
          if (got <= 0) break;
          const int64_t at = common::monotonic_ns();
          if (got < static_cast<ssize_t>(kProbeHeaderBytes)) continue;
          uint32_t seq = 0;
          int64_t sent_mono = 0;
          int64_t sent_real = 0;
          std::memcpy(&seq, buf.data(), 4);
          std::memcpy(&sent_mono, buf.data() + 4, 8);
          std::memcpy(&sent_real, buf.data() + 12, 8);
          if (seq >= results.size()) {
            ++unknown;
            continue;
          }
          int64_t delay = at - sent_mono;
          for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
            if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPNS) {
              timespec ts{};
              std::memcpy(&ts, CMSG_DATA(c), sizeof ts);
              const int64_t stamp = ts.tv_sec * 1'000'000'000LL + ts.tv_nsec;
              if (stamp != 0) delay = stamp - sent_real;
            }
          }
          auto& r = results[seq];
          if (r.copies++ == 0) r.delay_ns = delay;
          for (ssize_t i = static_cast<ssize_t>(kProbeHeaderBytes); i < got; ++i) {
            r.intact = r.intact && buf[static_cast<size_t>(i)] == 0x5a;
          }
        }
        continue;
      }
      if (sending_done && now >= stop_at) break;
    }
  });
  std::vector<uint8_t> payload(size, 0x5a);
  // The sender too: stamps must be taken right before sendto.
  int old_policy = 0;
  sched_param old_param{};
  ::pthread_getschedparam(::pthread_self(), &old_policy, &old_param);
  sched_param rt{};
  rt.sched_priority = 5;
  ::pthread_setschedparam(::pthread_self(), SCHED_FIFO, &rt);
  // Open loop, without spinning: the sender sleeps to each due time (timer
  // slack 1 ns) and sends whatever is due when it wakes. A spinning SCHED_FIFO
  // sender would hog a core for the whole run, get RT-throttled (50 ms per
  // second) and starve the injector on a 2-core machine. Stamps are taken
  // right before sendto, so a late wake-up shifts a send, not a measurement.
  ::prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
  const int64_t start = common::monotonic_ns();
  const double interval_ns = 1e9 / rate_pps;
  for (int i = 0; i < count; ++i) {
    const int64_t due = start + static_cast<int64_t>(std::llround(i * interval_ns));
    if (due > common::monotonic_ns()) {
      timespec ts{due / 1'000'000'000, due % 1'000'000'000};
      while (::clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) == EINTR) {
      }
    }
    const auto seq = static_cast<uint32_t>(i);
    timespec real{};
    ::clock_gettime(CLOCK_REALTIME, &real);
    const int64_t now = common::monotonic_ns();
    const int64_t now_real = real.tv_sec * 1'000'000'000LL + real.tv_nsec;
    std::memcpy(payload.data(), &seq, 4);
    std::memcpy(payload.data() + 4, &now, 8);
    std::memcpy(payload.data() + 12, &now_real, 8);
    results[static_cast<size_t>(i)].seq = seq;
    results[static_cast<size_t>(i)].send_ns = now;
    ::sendto(tx.get(), payload.data(), payload.size(), 0, to, to_length);
  }
  ::pthread_setschedparam(::pthread_self(), old_policy, &old_param);
  stop_at = common::monotonic_ns() + drain.count() * 1'000'000;
  sending_done = true;
  receiver.join();
  g_unknown_datagrams = unknown;
  return results;
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
