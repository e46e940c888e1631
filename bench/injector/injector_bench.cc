// Injector benchmark, all figures measured in one run on one testbed (two
// namespaces joined by a veth pair; traffic never leaves them):
//   1. UDP throughput across the veth: no rule, through nabla-injectd at zero
//      delay, and at 1 ms constant delay, as ratios of the no-rule baseline.
//   2. Accuracy with 1 ms delay at 10k and 50k packets/s: receiver-measured
//      |actual - requested| median and p99, for nabla-injectd and for a naive
//      reference delayer that sleeps in its packet callback.
// Usage: injector_bench [--seconds S]      (root)
//        injector_bench --naive QUEUE DELAY_US   (internal: the naive delayer)
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>

#include "injector_testbed.hh"
#include "nabla/common/clock.hh"
#include "nabla/injector/nfqueue.hh"

namespace {

using nabla::testing::InjectorTestbed;
using nabla::testing::ProbeResult;

// The hobby-delayer design DESIGN.md warns about: sleep in the callback.
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

// Sends as fast as one thread can for `seconds`; returns packets/s received.
double blast(InjectorTestbed& bed, double seconds) {
  nabla::common::FileDescriptor rx = bed.receiver().socket(AF_INET, SOCK_DGRAM, 0);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(9000);
  ::inet_pton(AF_INET, nabla::testing::kReceiverIp, &to.sin_addr);
  ::bind(rx.get(), reinterpret_cast<sockaddr*>(&to), sizeof to);
  int big = 16 << 20;
  ::setsockopt(rx.get(), SOL_SOCKET, SO_RCVBUFFORCE, &big, sizeof big);
  nabla::common::FileDescriptor tx = bed.sender().socket(AF_INET, SOCK_DGRAM, 0);
  std::atomic<bool> done{false};
  std::atomic<uint64_t> received{0};
  std::atomic<int64_t> first_ns{0};
  std::atomic<int64_t> last_ns{0};
  std::thread receiver([&] {
    char buf[2048];
    while (!done) {
      pollfd p{rx.get(), POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) continue;
      while (::recv(rx.get(), buf, sizeof buf, MSG_DONTWAIT) > 0) {
        const int64_t now = nabla::common::monotonic_ns();
        if (received++ == 0) first_ns = now;
        last_ns = now;
      }
    }
  });
  char payload[64] = {};
  const int64_t end = nabla::common::monotonic_ns() + static_cast<int64_t>(seconds * 1e9);
  uint64_t sent = 0;
  while (nabla::common::monotonic_ns() < end) {
    for (int i = 0; i < 64; ++i) {
      if (::sendto(tx.get(), payload, sizeof payload, 0, reinterpret_cast<sockaddr*>(&to),
                   sizeof to) > 0) {
        ++sent;
      }
    }
  }
  ::usleep(300'000);
  done = true;
  receiver.join();
  const double span = static_cast<double>(last_ns - first_ns) / 1e9;
  return span > 0 ? static_cast<double>(received) / span : 0.0;
}

struct Accuracy {
  int64_t median_ns;
  int64_t p99_ns;
  size_t lost;
};

Accuracy accuracy(InjectorTestbed& bed, double rate, double seconds, int64_t requested_ns) {
  const auto probes =
      nabla::testing::run_udp_probes(bed, 9000, static_cast<int>(rate * seconds), rate);
  std::vector<int64_t> err;
  for (const auto& p : probes) {
    if (p.copies > 0) err.push_back(std::llabs(p.delay_ns - requested_ns));
  }
  std::sort(err.begin(), err.end());
  if (err.empty()) return {0, 0, probes.size()};
  return {err[err.size() / 2], err[std::min(err.size() - 1, err.size() * 99 / 100)],
          nabla::testing::lost(probes)};
}

void print_accuracy(const char* who, double rate, const Accuracy& a) {
  std::printf("  %-14s %6.0f pps: |actual-requested| median %9.1f us  p99 %9.1f us  lost %zu\n",
              who, rate, a.median_ns / 1e3, a.p99_ns / 1e3, a.lost);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 4 && std::string(argv[1]) == "--naive") {
    return run_naive(static_cast<uint16_t>(std::stoi(argv[2])), std::stoll(argv[3]));
  }
  double seconds = 2.0;
  if (argc == 3 && std::string(argv[1]) == "--seconds") seconds = std::stod(argv[2]);
  if (::geteuid() != 0) {
    std::fprintf(stderr, "injector_bench: needs root (namespaces, NFQUEUE)\n");
    return 1;
  }
  const char* link = "udp 10.77.0.1 -> 10.77.0.2:9000";
  InjectorTestbed bed;
  bed.start_daemon();

  std::printf("throughput (one sender thread, 64-byte UDP, %.1f s each)\n", seconds);
  const double base = blast(bed, seconds);
  auto id = bed.call("inject.start", {{"link", link}, {"delay", "0"}, {"lease_s", 600}}).at("id");
  const double zero = blast(bed, seconds);
  bed.call("inject.stop", {{"id", id}});
  id = bed.call("inject.start", {{"link", link}, {"delay", "1ms"}, {"lease_s", 600}}).at("id");
  const double one_ms = blast(bed, seconds);
  bed.call("inject.stop", {{"id", id}});
  std::printf("  no rule            %10.0f pps  1.00\n", base);
  std::printf("  nabla, 0 delay     %10.0f pps  %.2f  (target >= 0.90)\n", zero, zero / base);
  std::printf("  nabla, 1 ms        %10.0f pps  %.2f  (target >= 0.85)\n", one_ms, one_ms / base);

  std::printf(
      "accuracy, 1 ms constant delay, %.1f s per rate (targets: median <= 10 us, "
      "p99 <= 100 us)\n",
      seconds);
  for (double rate : {10'000.0, 50'000.0}) {
    id = bed.call("inject.start", {{"link", link}, {"delay", "1ms"}, {"lease_s", 600}}).at("id");
    print_accuracy("nabla-injectd", rate, accuracy(bed, rate, seconds, 1'000'000));
    const auto stats = bed.call("inject.stats", {{"id", id}});
    std::printf(
        "  %-14s %6.0f pps: daemon actual delay mean %.1f us p99 %.1f us, "
        "batch verdicts %lld of %lld packets\n",
        "", rate, stats.at("actual_delay_ns").at("mean").get<double>() / 1e3,
        stats.at("actual_delay_ns").at("p99").get<double>() / 1e3,
        stats.at("batch_verdicts").get<long long>(), stats.at("packets").get<long long>());
    bed.call("inject.stop", {{"id", id}});
  }
  bed.stop_daemon();
  // The naive delayer: same queue discipline, sleeps 1 ms per packet inline.
  bed.sender().run_checked({"iptables", "-w", "5", "-A", "OUTPUT", "-p", "udp", "--dport", "9000",
                            "-j", "NFQUEUE", "--queue-num", "7", "--queue-bypass"});
  {
    nabla::common::ChildProcess naive({argv[0], "--naive", "7", "1000"}, &bed.sender());
    ::usleep(200'000);
    // One rate only: at 1 ms per packet it saturates at 1k pps anyway.
    print_accuracy("naive (sleeps)", 10'000.0, accuracy(bed, 10'000.0, 0.5, 1'000'000));
  }
  bed.sender().run({"iptables", "-w", "5", "-D", "OUTPUT", "-p", "udp", "--dport", "9000", "-j",
                    "NFQUEUE", "--queue-num", "7", "--queue-bypass"});
  return 0;
}
