// nabla-injectd square waves: the receiver sees the period and amplitude, the
// daemon's per-half accounting agrees, and a TCP bulk transfer under a square
// wave is never reordered by the injector.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <linux/tcp.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <thread>

#include "cpu_steal.hh"
#include "nabla/common/clock.hh"
#include "nabla/common/error.hh"
#include "nabla/testbed/injector_testbed.hh"
#include "nabla_test_support.hh"

namespace nabla::testing {
namespace {

using testbed::InjectorTestbed;
using testbed::kReceiverIp;
using testbed::lost;
using testbed::run_udp_probes;

constexpr int64_t kMs = 1'000'000;

TEST(InjectorWave, SquareWavePeriodAndAmplitudeAreVisibleAtTheReceiver) {
  NABLA_REQUIRE_ROOT_OR_SKIP();
  InjectorTestbed bed;
  bed.start_daemon();
  const auto started = bed.call(
      "inject.start", {{"link", "udp 10.77.0.1 -> 10.77.0.2:9000"},
                       {"delay", {{"kind", "square"}, {"amplitude", "5ms"}, {"period", "1s"}}},
                       {"lease_s", 30}});
  CpuSteal steal;
  const auto probes = run_udp_probes(bed, 9000, 3500, 1000.0);
  const auto stats = bed.call("inject.stats", {{"id", started.at("id")}, {"cycles", true}});
  // Parked vCPUs hold packets for milliseconds (seen at 11% steal: receiver
  // p99 12-15 ms, the daemon's low-half mean 0.5-1.3 ms): the bounds on
  // delays below are tight on a calm machine and loose otherwise.
  const bool calm = steal.calm();
  const int64_t slack = calm ? 0 : 2 * kMs;
  // An edge is found on 10 ms bins debounced over 50 ms; a stall at an edge
  // holds the packets behind it and moves the edge the receiver sees (seen
  // at 6% steal: a period read 40 ms long).
  const double edge_tolerance = calm ? 15.0 * kMs : 75.0 * kMs;
  std::printf("machine %s\n", steal.describe().c_str());
  EXPECT_LE(lost(probes), 2u);
  // Per 10 ms of send time, the least and the median delay. A stall only
  // adds delay, so a bin's state is read from its least delay: a low bin
  // reads high only when every one of its probes was held (at 30% steal,
  // medians read high for 150 ms after a falling edge).
  std::vector<std::pair<int64_t, int64_t>> bins;  // (first send, least delay)
  std::vector<int64_t> high;                      // medians of the high bins
  std::vector<int64_t> low;
  for (size_t i = 0; i + 10 <= probes.size(); i += 10) {
    std::vector<int64_t> d;
    for (size_t j = i; j < i + 10; ++j) {
      if (probes[j].delay_ns >= 0) d.push_back(probes[j].delay_ns);
    }
    if (d.empty()) continue;
    std::sort(d.begin(), d.end());
    bins.emplace_back(probes[i].send_ns, d.front());
    (d.front() > 5 * kMs / 2 ? high : low).push_back(d[d.size() / 2]);
  }
  // Debounced over 50 ms (below), so a short stall of the loaded machine
  // cannot fake an edge; a half is 500 ms.
  // The wave starts high at inject.start, some ms before the first probe, so
  // the probes begin inside a high half: that start is not an edge (taking it
  // for one made the first period look 10-20 ms short).
  ASSERT_GE(bins.size(), 5u);
  bool state_high = bins[0].second > 5 * kMs / 2;
  EXPECT_TRUE(state_high) << "the square wave starts high";
  std::vector<int64_t> rising_edges;
  std::vector<int64_t> falling_edges;
  // Four of five bins (40 of 50 ms) must be in the new state, and the edge
  // is the first of them: with all five required, one stalled bin within
  // 50 ms after an edge moves the edge past it (a falling edge then reads
  // 51 ms late, even on a calm machine), while 40 ms of the other state is
  // still far more than a stall fakes.
  auto differs = [&](size_t j) { return (bins[j].second > 5 * kMs / 2) != state_high; };
  for (size_t i = 0; i + 5 <= bins.size(); ++i) {
    if (!differs(i)) continue;
    size_t agreeing = 0;
    for (size_t j = i; j < i + 5; ++j) agreeing += differs(j) ? 1 : 0;
    if (agreeing < 4) continue;
    state_high = !state_high;
    (state_high ? rising_edges : falling_edges).push_back(bins[i].first);
  }
  // 3.5 periods from high: falling edges at 0.5, 1.5, 2.5, 3.5 s (the last
  // one at the end of the probes, perhaps unseen), rising at 1, 2, 3 s.
  ASSERT_EQ(rising_edges.size(), 3u);
  ASSERT_GE(falling_edges.size(), 3u);
  for (size_t i = 1; i < rising_edges.size(); ++i) {
    EXPECT_NEAR(static_cast<double>(rising_edges[i] - rising_edges[i - 1]), 1000.0 * kMs,
                edge_tolerance);
  }
  for (size_t i = 1; i < falling_edges.size(); ++i) {
    EXPECT_NEAR(static_cast<double>(falling_edges[i] - falling_edges[i - 1]), 1000.0 * kMs,
                edge_tolerance);
  }
  // Duty 50 %: each high half lasts half a period.
  for (size_t i = 0; i < rising_edges.size() && i + 1 < falling_edges.size(); ++i) {
    EXPECT_NEAR(static_cast<double>(falling_edges[i + 1] - rising_edges[i]), 500.0 * kMs,
                edge_tolerance);
  }
  const double high_fraction =
      static_cast<double>(high.size()) / static_cast<double>(high.size() + low.size());
  EXPECT_NEAR(high_fraction, 2.0 / 3.5, calm ? 0.03 : 0.06);
  std::sort(high.begin(), high.end());
  std::sort(low.begin(), low.end());
  const int64_t high_median = high[high.size() / 2];
  EXPECT_GE(high_median, 5 * kMs);
  EXPECT_LE(high_median, 5 * kMs + kMs / 2 + slack);
  EXPECT_LT(low[low.size() / 2], kMs / 2 + slack);
  // The daemon's per-half actual delays agree: never early, the medians on
  // any machine, the means (which one stall moves: at 48% steal the high
  // half's read 7.9 ms) on a calm one.
  const auto& halves = stats.at("halves");
  const double high_mean = halves.at("high").at("mean").get<double>();
  const double low_mean = halves.at("low").at("mean").get<double>();
  const double high_p50 = halves.at("high").at("p50").get<double>();
  EXPECT_GE(halves.at("high").at("min").get<double>(), 5.0 * kMs);
  EXPECT_GE(high_p50, 5.0 * kMs);
  EXPECT_LE(high_p50, 5.3 * kMs + static_cast<double>(slack));
  EXPECT_LT(halves.at("low").at("p50").get<double>(), 0.3 * kMs + static_cast<double>(slack));
  if (calm) {
    EXPECT_NEAR(high_mean, 5.0 * kMs, 0.5 * kMs);
    EXPECT_LT(low_mean, 0.3 * kMs);
  }
  EXPECT_GE(stats.at("cycles").size(), 4u);
  std::printf("high median %.3f ms, low median %.3f ms; daemon high %.3f ms low %.3f ms\n",
              high_median / 1e6, low[low.size() / 2] / 1e6, high_mean / 1e6, low_mean / 1e6);
}

// Records the TCP sequence numbers of data segments to `port` as they arrive
// on the receiver's interface, to check their order.
class SegmentRecorder {
 public:
  SegmentRecorder(common::NetNamespace& ns, const char* ifname, uint16_t port) : port_(port) {
    fd_ = ns.socket(AF_PACKET, SOCK_DGRAM, htons(ETH_P_IP));
    // The interface index must be looked up inside the namespace.
    // (setns alone does not remount /sys, so ask ip: "5: nb-rcv0@if4: <...")
    const auto r = ns.run({"ip", "-o", "link", "show", "dev", ifname});
    sockaddr_ll sll{};
    sll.sll_family = AF_PACKET;
    sll.sll_protocol = htons(ETH_P_IP);
    sll.sll_ifindex = std::stoi(r.stdout_text);
    common::check_syscall("bind(AF_PACKET)",
                          ::bind(fd_.get(), reinterpret_cast<sockaddr*>(&sll), sizeof sll));
    int big = 16 << 20;
    ::setsockopt(fd_.get(), SOL_SOCKET, SO_RCVBUFFORCE, &big, sizeof big);
    thread_ = std::thread([this] { run(); });
  }
  ~SegmentRecorder() { stop(); }
  void stop() {
    done_ = true;
    if (thread_.joinable()) thread_.join();
  }
  uint64_t segments() const { return segments_; }
  // Segments that left a hole (seq beyond the next expected byte): what a
  // reordering (or a loss) looks like on the wire.
  uint64_t holes() const { return holes_; }
  // Segments carrying only already-seen bytes: retransmissions.
  uint64_t repeats() const { return repeats_; }
  // Packets the capture socket itself dropped (holes are unreliable then).
  uint64_t capture_drops() {
    tpacket_stats st{};
    socklen_t len = sizeof st;
    ::getsockopt(fd_.get(), SOL_PACKET, PACKET_STATISTICS, &st, &len);
    drops_ += st.tp_drops;
    return drops_;
  }

 private:
  void run() {
    uint8_t buf[256];  // headers suffice; MSG_TRUNC returns the real length
    bool have = false;
    uint32_t next = 0;
    while (!done_) {
      pollfd p{fd_.get(), POLLIN, 0};
      if (::poll(&p, 1, 20) <= 0) continue;
      const ssize_t n = ::recv(fd_.get(), buf, sizeof buf, MSG_TRUNC);
      if (n < 40) continue;
      const size_t ihl = static_cast<size_t>(buf[0] & 0x0f) * 4;
      if (buf[9] != IPPROTO_TCP || ihl + 20 > sizeof buf) continue;
      const size_t total = static_cast<size_t>((buf[2] << 8) | buf[3]);
      uint16_t dport = 0;
      std::memcpy(&dport, &buf[ihl + 2], 2);
      if (ntohs(dport) != port_) continue;
      uint32_t seq = 0;
      std::memcpy(&seq, &buf[ihl + 4], 4);
      seq = ntohl(seq);
      const size_t doff = static_cast<size_t>(buf[ihl + 12] >> 4) * 4;
      // GSO packets report total length 0 in the IP header; use the capture length.
      const size_t ip_len = total != 0 ? total : static_cast<size_t>(n);
      if (ip_len <= ihl + doff) continue;
      const auto len = static_cast<uint32_t>(ip_len - ihl - doff);
      ++segments_;
      if (have) {
        const auto ahead = static_cast<int32_t>(seq - next);
        if (ahead > 0) ++holes_;
        if (static_cast<int32_t>(seq + len - next) <= 0) ++repeats_;
      }
      if (!have || static_cast<int32_t>(seq + len - next) > 0) next = seq + len;
      have = true;
    }
  }

  uint16_t port_;
  common::FileDescriptor fd_;
  std::thread thread_;
  std::atomic<bool> done_{false};
  std::atomic<uint64_t> segments_{0};
  std::atomic<uint64_t> holes_{0};
  std::atomic<uint64_t> repeats_{0};
  uint64_t drops_ = 0;
};

TEST(InjectorWave, TcpBulkUnderASquareWaveIsNotReordered) {
  NABLA_REQUIRE_ROOT_OR_SKIP();
  InjectorTestbed bed;
  bed.start_daemon();
  const auto started = bed.call(
      "inject.start", {{"link", "tcp 10.77.0.1 -> 10.77.0.2:5001"},
                       {"delay", {{"kind", "square"}, {"amplitude", "5ms"}, {"period", "200ms"}}},
                       {"lease_s", 30}});
  constexpr size_t kBytes = size_t{1} << 30;  // upper bound; the transfer runs 1.2 s
  SegmentRecorder recorder(bed.receiver(), "nb-rcv0", 5001);
  common::FileDescriptor listener = bed.receiver().socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(5001);
  ::inet_pton(AF_INET, kReceiverIp, &addr.sin_addr);
  ASSERT_EQ(::bind(listener.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(::listen(listener.get(), 1), 0);
  size_t received = 0;
  size_t corrupt = 0;
  std::thread server([&] {
    pollfd p{listener.get(), POLLIN, 0};
    if (::poll(&p, 1, 5000) <= 0) return;
    common::FileDescriptor conn(::accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC));
    timeval tv{10, 0};
    ::setsockopt(conn.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    std::vector<uint8_t> buf(1 << 16);
    for (;;) {
      const ssize_t n = ::recv(conn.get(), buf.data(), buf.size(), 0);
      if (n <= 0) break;
      for (ssize_t i = 0; i < n; ++i) {
        corrupt +=
            buf[static_cast<size_t>(i)] != static_cast<uint8_t>((received + i) % 251) ? 1 : 0;
      }
      received += static_cast<size_t>(n);
    }
  });
  common::FileDescriptor client = bed.sender().socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_EQ(::connect(client.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  // The stream is byte i = i % 251; a 64 KiB window of it at any phase.
  std::vector<uint8_t> data(251 + (64 << 10));
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i % 251);
  const int64_t t0 = common::monotonic_ns();
  size_t sent = 0;
  // 1.2 s of sending spans six edges of the 200 ms square wave.
  while (sent < kBytes && common::monotonic_ns() - t0 < 1'200 * kMs) {
    const size_t chunk = std::min<size_t>(64 << 10, kBytes - sent);
    const ssize_t n = ::send(client.get(), data.data() + sent % 251, chunk, 0);
    if (n <= 0) break;
    sent += static_cast<size_t>(n);
  }
  ::shutdown(client.get(), SHUT_WR);
  server.join();
  const double seconds = static_cast<double>(common::monotonic_ns() - t0) / 1e9;
  tcp_info info{};
  socklen_t len = sizeof info;
  ::getsockopt(client.get(), IPPROTO_TCP, TCP_INFO, &info, &len);
  ::usleep(50'000);
  recorder.stop();
  const auto stats = bed.call("inject.stats", {{"id", started.at("id")}});
  EXPECT_EQ(received, sent);
  EXPECT_GT(sent, 1u << 20);
  EXPECT_EQ(corrupt, 0u);
  EXPECT_GT(recorder.segments(), 100u);
  // No segment overtook another: no holes on the wire (the capture dropped
  // nothing, so it saw every segment), and the sender detected no reordering.
  EXPECT_EQ(recorder.capture_drops(), 0u);
  EXPECT_EQ(recorder.holes(), 0u) << "segments arrived out of order";
  EXPECT_EQ(info.tcpi_reord_seen, 0u) << stats.dump();
  // Retransmissions may occur, but none caused by reordering: with 0 -> 5 ms
  // steps on a ~0.1 ms path, tail-loss probes (PTO = 2 srtt + 2 jiffies) fire
  // spuriously; they resend already-delivered bytes (repeats), never fill holes.
  EXPECT_LE(info.tcpi_total_retrans, recorder.repeats());
  EXPECT_GT(stats.at("delayed").get<uint64_t>(), 0u);
  EXPECT_EQ(stats.at("reordered").get<uint64_t>(), 0u);
  std::printf("%zu bytes in %.2f s, %llu segments, %u retransmits (%llu repeats seen)\n", received,
              seconds, static_cast<unsigned long long>(recorder.segments()),
              info.tcpi_total_retrans, static_cast<unsigned long long>(recorder.repeats()));
}

// The q-quantile of `values` (not empty), q in [0, 1).
int64_t quantile_of(std::vector<int64_t> values, double q) {
  const auto k = static_cast<std::size_t>(q * static_cast<double>(values.size()));
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(k), values.end());
  return values[k];
}

// The median of `values` (not empty).
int64_t median_of(std::vector<int64_t> values) {
  return quantile_of(std::move(values), 0.5);
}

// How far the receiver's probes are from the requested delay: per bin of
// probes, the q-quantile of each probe's delay minus its own requested delay
// (so the wave's slope inside a bin does not count), less the bins' common
// offset (the path and the release's wake-up lateness). The requested delay
// of a probe is `requested(send_ns)`.
struct Following {
  std::vector<int64_t> residual_ns;  // per bin
  int64_t offset_ns = 0;
  int64_t worst_ns = 0;
  // The sum of |residual|: what the anchor's fit minimises, which one
  // stalled bin does not rule.
  int64_t total_ns = 0;
  // The least delay minus requested delay of any one probe, offset not
  // taken off: a stall only ever adds, so below zero is a release too early.
  int64_t earliest_ns = INT64_MAX;
};

template <typename Requested>
Following following(const std::vector<std::vector<const testbed::ProbeResult*>>& bins,
                    Requested requested, double q) {
  Following f;
  std::vector<int64_t> raw;
  for (const auto& bin : bins) {
    std::vector<int64_t> excess;
    for (const auto* p : bin) excess.push_back(p->delay_ns - requested(p->send_ns));
    f.earliest_ns = std::min(f.earliest_ns, *std::min_element(excess.begin(), excess.end()));
    raw.push_back(quantile_of(excess, q));
  }
  f.offset_ns = median_of(raw);
  for (int64_t r : raw) {
    f.residual_ns.push_back(r - f.offset_ns);
    f.worst_ns = std::max(f.worst_ns, std::abs(r - f.offset_ns));
    f.total_ns += std::abs(r - f.offset_ns);
  }
  return f;
}

// The |residuals| of `f`, sorted.
std::vector<int64_t> spread_of(const Following& f) {
  std::vector<int64_t> spread(f.residual_ns);
  for (int64_t& r : spread) r = std::abs(r);
  std::sort(spread.begin(), spread.end());
  return spread;
}

// The sine wave of the test below: 4 ms at its peak, a period of 1 s.
constexpr double kSineAmplitudeNs = 4.0 * kMs;
constexpr int64_t kSinePeriodNs = 1000 * kMs;

int64_t sine_requested(int64_t send_ns, int64_t anchor_ns) {
  const double angle = 2.0 * M_PI * static_cast<double>((send_ns - anchor_ns) % kSinePeriodNs) /
                       static_cast<double>(kSinePeriodNs);
  return static_cast<int64_t>(std::llround(kSineAmplitudeNs * 0.5 * (1.0 + std::cos(angle))));
}

// The least of the requested delays of a probe sent at `send_ns` over the
// anchors the daemon may have taken (it anchors while it serves the call).
int64_t least_requested(int64_t send_ns, int64_t called_ns, int64_t returned_ns) {
  int64_t least = sine_requested(send_ns, returned_ns);
  for (int64_t a = called_ns; a < returned_ns; a += 50'000) {
    least = std::min(least, sine_requested(send_ns, a));
  }
  return least;
}

TEST(InjectorWave, SineDelayIsFollowedPerBin) {
  NABLA_REQUIRE_ROOT_OR_SKIP();
  InjectorTestbed bed;
  bed.start_daemon();
  const int64_t called_ns = common::monotonic_ns();
  bed.call("inject.start", {{"link", "udp 10.77.0.1 -> 10.77.0.2:9000"},
                            {"delay", {{"kind", "sine"}, {"amplitude", "4ms"}, {"period", "1s"}}},
                            {"lease_s", 30}});
  const int64_t returned_ns = common::monotonic_ns();
  CpuSteal steal;
  const auto probes = run_udp_probes(bed, 9000, 2000, 1000.0);
  const bool calm = steal.calm();
  std::printf("machine %s\n", steal.describe().c_str());
  EXPECT_LE(lost(probes), 2u);
  // Nothing early, on any machine and whatever the fit below: each probe is
  // stamped before its send, so a stall anywhere only adds to its delay, and
  // no anchor the daemon may have taken asks for less than the least one.
  // A wave off by a tenth of its period, or too small, is early by 1-2 ms.
  int64_t earliest_ns = INT64_MAX;
  std::vector<std::vector<const testbed::ProbeResult*>> bins(1);
  for (const auto& p : probes) {
    if (p.delay_ns < 0) continue;
    earliest_ns =
        std::min(earliest_ns, p.delay_ns - least_requested(p.send_ns, called_ns, returned_ns));
    if (bins.back().size() == 20) bins.emplace_back();  // 20 ms of probes
    bins.back().push_back(&p);
  }
  EXPECT_GE(earliest_ns, 0) << "a probe arrived before any requested delay";
  // The anchor that fits best, between the call and its return, judged per
  // bin by its 10% probe: a parked vCPU holds the packets due while it is
  // parked late, never early (at 2.2% steal beside a build, 6 bins in 100
  // had medians 1.6 ms late).
  const double q = 0.1;
  Following best;
  best.total_ns = INT64_MAX;
  int64_t anchor_ns = called_ns;
  for (int64_t anchor = called_ns; anchor <= returned_ns; anchor += 50'000) {
    const Following f = following(
        bins, [&](int64_t send_ns) { return sine_requested(send_ns, anchor); }, q);
    if (f.total_ns < best.total_ns) {
      best = f;
      anchor_ns = anchor;
    }
  }
  const std::vector<int64_t> spread = spread_of(best);
  std::printf(
      "sine: anchor %.3f ms after the call (returned after %.3f ms), earliest %ld ns; per bin "
      "the %.0f%% probe: offset %ld ns, residual p50 %ld ns, p90 %ld ns, p95 %ld ns, worst %ld "
      "ns over %zu bins\n",
      static_cast<double>(anchor_ns - called_ns) / 1e6,
      static_cast<double>(returned_ns - called_ns) / 1e6, earliest_ns, q * 100, best.offset_ns,
      spread[spread.size() / 2], spread[spread.size() * 9 / 10], spread[spread.size() * 95 / 100],
      best.worst_ns, spread.size());
  // A calm machine's 95 bins in 100 are held to 100 us (at 2.8% steal one
  // bin was 1.2 ms off and the rest within 32 us). On a busy one stalls come
  // in runs longer than a bin (at 15% steal more than 10 bins in 100 had
  // medians 1.8-3.5 ms off; at 36%, 10 in 100 had even their 10% probe 3.8
  // ms late): the median bin's 10% probe is held to an eighth of the
  // amplitude, which a wave off by a tenth of its period (about 0.9 ms
  // there) still fails, as it fails nothing early.
  if (calm) {
    EXPECT_LE(spread[spread.size() * 95 / 100], 100'000);
  } else {
    EXPECT_LE(spread[spread.size() / 2], static_cast<int64_t>(kSineAmplitudeNs / 8.0));
  }
  EXPECT_LT(best.offset_ns, kMs);
}

// Per trace segment (a cycle of inject.stats), the daemon's median (`key`
// "p50") or least ("min") actual delay minus the segment's requested delay
// (4 ms × level); not the mean, as one stall of a loaded machine moves a
// segment's mean by 100 µs. Checks that a segment's packets all sit in the
// half its level belongs to.
std::vector<int64_t> accounted_minus_requested(const nlohmann::json& stats,
                                               const std::vector<double>& levels, const char* key) {
  std::vector<int64_t> daemon_offset;
  for (const auto& c : stats.at("cycles")) {
    const auto segment = c.at("cycle").get<int64_t>();
    if (segment < 0 || segment >= std::ssize(levels)) continue;
    const double level = levels[static_cast<size_t>(segment)];
    // Levels >= 1/2 are the high half, the others the low half.
    const auto& half = c.at(level >= 0.5 ? "high" : "low");
    EXPECT_EQ(c.at(level >= 0.5 ? "low" : "high").at("count").get<double>(), 0.0) << segment;
    EXPECT_GT(half.at("count").get<double>(), 50.0) << segment;
    daemon_offset.push_back(
        std::llround(half.at(key).get<double>() - 4.0 * static_cast<double>(kMs) * level));
  }
  return daemon_offset;
}

TEST(InjectorWave, StepTraceIsFollowedPerSegmentAndAccountedPerSegment) {
  NABLA_REQUIRE_ROOT_OR_SKIP();
  InjectorTestbed bed;
  bed.start_daemon();
  // Eight 200 ms segments played once, 4 ms at level 1.
  const std::vector<double> levels = {0.25, 1.0, 0.5, 0.0, 0.75, 0.1, 0.6, 0.3};
  constexpr int64_t kSegmentNs = 200 * kMs;
  nlohmann::json points = nlohmann::json::array();
  for (size_t i = 0; i < levels.size(); ++i) {
    points.push_back({static_cast<int64_t>(i) * kSegmentNs, levels[i]});
  }
  points.push_back({static_cast<int64_t>(levels.size()) * kSegmentNs, 0.0});
  const int64_t called_ns = common::monotonic_ns();
  const auto started = bed.call("inject.start", {{"link", "udp 10.77.0.1 -> 10.77.0.2:9000"},
                                                 {"delay",
                                                  {{"kind", "trace"},
                                                   {"amplitude", "4ms"},
                                                   {"points", points},
                                                   {"loop", false},
                                                   {"interpolation", "step"}}},
                                                 {"lease_s", 30}});
  const int64_t returned_ns = common::monotonic_ns();
  CpuSteal steal;
  const auto probes = run_udp_probes(bed, 9000, 900, 500.0);
  const bool calm = steal.calm();
  const auto stats = bed.call("inject.stats", {{"id", started.at("id")}, {"cycles", true}});
  EXPECT_LE(lost(probes), 2u);
  // Per segment, the probes sent well inside it (20 ms from either edge,
  // whichever moment between the call and its return the daemon anchored).
  std::vector<std::vector<const testbed::ProbeResult*>> segments(levels.size());
  for (const auto& p : probes) {
    if (p.delay_ns < 0) continue;
    const int64_t early = p.send_ns - returned_ns;
    const int64_t late = p.send_ns - called_ns;
    const int64_t segment = late / kSegmentNs;
    if (early < 0 || segment != early / kSegmentNs || segment >= std::ssize(levels)) continue;
    if (late % kSegmentNs < 20 * kMs || early % kSegmentNs > kSegmentNs - 20 * kMs) continue;
    segments[static_cast<size_t>(segment)].push_back(&p);
  }
  for (const auto& s : segments) ASSERT_GE(s.size(), 40u);
  // Per segment its 10% probe, as a parked vCPU holds what is due while it
  // is parked late (at 17% steal segment medians read up to 1.4 ms late,
  // their 10% probes within 40 us of each other; at 30-36% even a 10% probe
  // read 0.7-2.9 ms late in one segment of eight, so there the median
  // segment is judged, and every segment by the daemon's own accounting).
  const double q = 0.1;
  const Following f = following(
      segments,
      [&](int64_t send_ns) {
        const auto segment = static_cast<size_t>((send_ns - called_ns) / kSegmentNs);
        return static_cast<int64_t>(std::llround(4.0 * kMs * levels[segment]));
      },
      q);
  for (size_t i = 0; i < levels.size(); ++i) {
    std::printf("segment %zu: level %.2f, receiver's %.0f%% probe - requested %+ld ns\n", i,
                levels[i], q * 100, f.residual_ns[i] + f.offset_ns);
  }
  if (calm) {
    EXPECT_LE(f.worst_ns, 100'000);
  } else {
    EXPECT_LE(spread_of(f)[f.residual_ns.size() / 2], 500'000);
  }
  // Nothing early: a probe is stamped before its send, a stall only adds.
  EXPECT_GE(f.earliest_ns, 0) << "a probe arrived before its segment's delay";
  EXPECT_LT(f.offset_ns, kMs);
  // The daemon's accounting: one cycle per segment, its median (on a busy
  // machine its least) the level's delay, the same common offset aside.
  const std::vector<int64_t> daemon_offset =
      accounted_minus_requested(stats, levels, calm ? "p50" : "min");
  ASSERT_EQ(daemon_offset.size(), levels.size());
  const int64_t common_offset = median_of(daemon_offset);
  for (size_t i = 0; i < daemon_offset.size(); ++i) {
    EXPECT_NEAR(static_cast<double>(daemon_offset[i]), static_cast<double>(common_offset),
                calm ? 100'000.0 : 500'000.0)
        << "segment " << i;
  }
}

}  // namespace
}  // namespace nabla::testing
