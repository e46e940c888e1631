// nabla-injectd end to end: constant delay accuracy and link matching.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "cpu_steal.hh"
#include "nabla/testbed/injector_testbed.hh"
#include "nabla_test_support.hh"

namespace nabla::testing {
namespace {

using testbed::delay_mean;
using testbed::delay_percentile;
using testbed::InjectorTestbed;
using testbed::lost;
using testbed::ProbeFamily;
using testbed::ProbeResult;
using testbed::run_udp_probes;

constexpr int64_t kMs = 1'000'000;

TEST(InjectorDelay, Constant20msOnUdpIsAccurateAndOnlyOnTheLink) {
  NABLA_REQUIRE_ROOT_OR_SKIP();
  InjectorTestbed bed;
  bed.start_daemon();
  const auto started = bed.call("inject.start", {{"link", "udp 10.77.0.1 -> 10.77.0.2:9000"},
                                                 {"delay", "20ms"},
                                                 {"lease_s", 30},
                                                 {"seed", 7}});
  const std::string id = started.at("id");
  ASSERT_EQ(started.at("seed"), 7);
  // The flow starts while the injection is active (first-packet conntrack race).
  std::vector<ProbeResult> on_link;
  std::vector<ProbeResult> off_link;
  CpuSteal steal;
  std::thread other([&] { off_link = run_udp_probes(bed, 9001, 300, 300.0); });
  on_link = run_udp_probes(bed, 9000, 1000, 1000.0);
  other.join();
  // Tight bounds on a calm machine; looser ones while the hypervisor parks
  // our vCPUs (cpu_steal.hh; parked vCPUs give e.g. p50 20.88 ms, p99 34 ms).
  const bool calm = steal.calm();
  std::printf("machine %s\n", steal.describe().c_str());
  const auto stats = bed.call("inject.stats", {{"id", id}});
  bed.call("inject.stop", {{"id", id}});

  EXPECT_LE(lost(on_link), 1u) << "UDP probes lost under the injection";
  const int64_t p50 = delay_percentile(on_link, 0.5);
  EXPECT_GE(p50, 20 * kMs);
  EXPECT_LE(p50, 20 * kMs + kMs / 2 + (calm ? 0 : 2 * kMs));
  const double receiver_mean = delay_mean(on_link);
  const double daemon_mean = stats.at("actual_delay_ns").at("mean").get<double>();
  // The daemon's own accounting agrees with what the receiver saw. The
  // receiver's mean is taken over its fastest 99% of probes: a receiving
  // softirq deferred to ksoftirqd for milliseconds is receiver-side noise.
  // What separates the two clocks is the sender's stack, the veth path and
  // the daemon's wake-up for each packet (it timestamps on receive), tens to
  // a few hundred us depending on the machine: the bound of 1 ms tells a
  // correct account from a wrong one (off by the 20 ms delay, or by a held
  // batch), and how close they are is a benchmark figure.
  std::vector<int64_t> sorted;
  for (const auto& p : on_link) {
    if (p.copies > 0) sorted.push_back(p.delay_ns);
  }
  std::sort(sorted.begin(), sorted.end());
  sorted.resize(sorted.size() * 99 / 100);
  double trimmed = 0;
  for (int64_t d : sorted) trimmed += static_cast<double>(d);
  trimmed /= static_cast<double>(sorted.size());
  EXPECT_NEAR(daemon_mean, trimmed, 1.0 * kMs) << "untrimmed receiver mean " << receiver_mean;
  // The daemon never claims more delay than the receiver saw.
  EXPECT_LE(daemon_mean, receiver_mean);
  EXPECT_GE(stats.at("packets").get<uint64_t>(), 999u);
  EXPECT_EQ(stats.at("dropped").get<uint64_t>(), 0u);
  // The kernel assigned one id per queued packet and dropped none.
  EXPECT_EQ(stats.at("kernel").at("id_sequence").get<uint64_t>(),
            stats.at("packets").get<uint64_t>());
  EXPECT_EQ(stats.at("kernel").at("queue_dropped").get<uint64_t>(), 0u);
  // Port 9001 is not on the link: not delayed.
  EXPECT_EQ(lost(off_link), 0u);
  EXPECT_LT(delay_percentile(off_link, 0.99), (calm ? 5 : 10) * kMs);  // vs 20 ms on the link
  std::printf("receiver p50 %.3f ms p99 %.3f ms mean %.3f ms; daemon mean %.3f ms p99 %.3f ms\n",
              p50 / 1e6, delay_percentile(on_link, 0.99) / 1e6, receiver_mean / 1e6,
              daemon_mean / 1e6, stats.at("actual_delay_ns").at("p99").get<double>() / 1e6);
  EXPECT_TRUE(bed.call("inject.list", nlohmann::json::object()).at("injections").empty());
  // Stop removed the rule; the chains stay until the daemon exits.
  for (const auto& line : bed.nabla_rules())
    EXPECT_EQ(line.find("nabla:"), std::string::npos) << line;
}

// Direction in: the daemon on the receiving host queues its INPUT. The
// kernel stamps each datagram when it enters that host (NFQA_TIMESTAMP), and
// the delay counts from that stamp, so the daemon's own wait for the packet
// is inside the 20 ms, not on top of it. The probes time delivery after
// recvmsg here (the kernel's receive stamp precedes the delaying hook), so
// the bound includes the receiving thread's wake-up.
TEST(InjectorDelay, InboundDelayCountsFromTheKernelsArrivalStamp) {
  NABLA_REQUIRE_ROOT_OR_SKIP();
  InjectorTestbed bed;
  bed.start_daemon({}, InjectorTestbed::Host::kReceiver);
  bed.set_probe_receive_call_stamps(true);
  const auto started = bed.call("inject.start", {{"link", "udp 10.77.0.1 -> 10.77.0.2:9000"},
                                                 {"direction", "in"},
                                                 {"delay", "20ms"},
                                                 {"lease_s", 30}});
  const std::string id = started.at("id");
  CpuSteal steal;
  const auto probes = run_udp_probes(bed, 9000, 500, 500.0);
  const bool calm = steal.calm();
  std::printf("machine %s\n", steal.describe().c_str());
  const auto stats = bed.call("inject.stats", {{"id", id}});
  bed.call("inject.stop", {{"id", id}});
  EXPECT_LE(lost(probes), 1u);
  const int64_t p50 = delay_percentile(probes, 0.5);
  EXPECT_GE(p50, 20 * kMs);  // never early: the stamp is at or after the send
  EXPECT_LE(p50, 20 * kMs + kMs / 2 + (calm ? 0 : 2 * kMs));
  // Every packet carried the stamp and was timed from it.
  EXPECT_GE(stats.at("packets").get<uint64_t>(), 499u);
  EXPECT_EQ(stats.at("kernel_stamped"), stats.at("packets"));
  // The daemon's actual delay starts at the stamp: its median is the
  // requested 20 ms plus release lateness, well under the receiver's.
  const double daemon_p50 = stats.at("actual_delay_ns").at("p50").get<double>();
  EXPECT_GE(daemon_p50, 20.0 * kMs);
  EXPECT_LE(daemon_p50, static_cast<double>(p50));
  std::printf("receiver p50 %.3f ms p99 %.3f ms; daemon p50 %.3f ms p99 %.3f ms\n", p50 / 1e6,
              delay_percentile(probes, 0.99) / 1e6, daemon_p50 / 1e6,
              stats.at("actual_delay_ns").at("p99").get<double>() / 1e6);
}

// Median and p99 of |one-way delay - requested| over received probes.
std::pair<int64_t, int64_t> error_quantiles(const std::vector<ProbeResult>& probes,
                                            int64_t requested_ns) {
  std::vector<int64_t> err;
  for (const auto& p : probes) {
    if (p.copies > 0) err.push_back(std::llabs(p.delay_ns - requested_ns));
  }
  std::sort(err.begin(), err.end());
  if (err.empty()) return {-1, -1};
  return {err[err.size() / 2], err[err.size() * 99 / 100]};
}

// Every timing mode of the release loop delays correctly: nothing leaves
// before its deadline, and the median lands within half the delay of it (far
// from undelayed and from twice the delay on any machine). Which mode is more
// accurate is a benchmark question (bench/injector), not a test's.
TEST(InjectorDelay, EveryReleaseTimingModeDelaysCorrectly) {
  NABLA_REQUIRE_ROOT_OR_SKIP();
  InjectorTestbed bed;
  const char* link = "udp 10.77.0.1 -> 10.77.0.2:9000";
  constexpr int64_t kDelay = 2 * kMs;
  // Self-calibrated (the default), sleeping, a fixed spin, and busy polling.
  const std::vector<std::vector<std::string>> configs = {
      {}, {"--spin-us", "0"}, {"--spin-us", "50"}, {"--busy-poll-us", "200"}};
  for (const auto& flags : configs) {
    const std::string name = flags.empty() ? "self-calibrated" : flags[0] + " " + flags[1];
    bed.start_daemon(flags);
    const auto id =
        bed.call("inject.start", {{"link", link}, {"delay", "2ms"}, {"lease_s", 30}}).at("id");
    const auto probes = run_udp_probes(bed, 9000, 1000, 2000.0);
    const auto timer = bed.call("daemon.info", nlohmann::json::object()).at("timer");
    bed.call("inject.stop", {{"id", id}});
    bed.stop_daemon();
    ASSERT_EQ(lost(probes), 0u) << name;
    EXPECT_GE(delay_percentile(probes, 0.0), kDelay) << name << ": released early";
    const int64_t p50 = delay_percentile(probes, 0.5);
    EXPECT_LT(p50, kDelay + kDelay / 2) << name;
    const auto [median_error, p99_error] = error_quantiles(probes, kDelay);
    std::printf("%s: |actual - 2 ms| median %.1f us, p99 %.1f us; timer %s\n", name.c_str(),
                median_error / 1e3, p99_error / 1e3, timer.dump().c_str());
    const bool fixed = !flags.empty() && flags[0] == "--spin-us";
    EXPECT_EQ(timer.at("mode"), fixed ? "fixed" : "self-calibrated") << name;
    if (fixed) {
      EXPECT_EQ(timer.at("lead_us").get<double>(), std::stod(flags[1])) << name;
    }
    // The loop kept measuring its wake-ups while it delayed packets (the
    // start-up probe alone records 24), and the lead stays within its cap.
    EXPECT_GT(timer.at("wakeup_lateness_us").at("recorded").get<uint64_t>(), 24u) << name;
    EXPECT_GE(timer.at("lead_us").get<double>(), 0.0) << name;
    EXPECT_LE(timer.at("lead_us").get<double>(), fixed ? 50.0 : 500.0) << name;
    EXPECT_LE(timer.at("polled_fraction").get<double>(), 1.0) << name;
  }
}

// --max-held-bytes bounds what every injection holds at once: probes of
// 1000 bytes (an IP length of 1028, charged 1028 + 1024) against a bound of
// 20,000 bytes: the first 9 are held for the whole delay, the other 31 pass
// at once and count in queue_full. All 40 leave within 40 ms, long before
// the first release at 1 s.
TEST(InjectorDelay, MaxHeldBytesPassesWhatItCannotHold) {
  NABLA_REQUIRE_ROOT_OR_SKIP();
  InjectorTestbed bed;
  bed.start_daemon({"--max-held-bytes", "20000"});
  const auto id =
      bed.call("inject.start",
               {{"link", "udp 10.77.0.1 -> 10.77.0.2:9000"}, {"delay", "1s"}, {"lease_s", 30}})
          .at("id");
  const auto probes = run_udp_probes(bed, 9000, 40, 1000.0, 1000, std::chrono::milliseconds(1500));
  const auto stats = bed.call("inject.stats", {{"id", id}});
  bed.call("inject.stop", {{"id", id}});
  ASSERT_EQ(lost(probes), 0u);
  for (const auto& p : probes) {
    if (p.seq < 9) {
      EXPECT_GE(p.delay_ns, 1000 * kMs) << "probe " << p.seq << " was held";
    } else {
      EXPECT_LT(p.delay_ns, 1000 * kMs) << "probe " << p.seq << " passed at once";
    }
  }
  EXPECT_EQ(stats.at("delayed").get<uint64_t>(), 9u) << stats.dump();
  EXPECT_EQ(stats.at("queue_full").get<uint64_t>(), 31u) << stats.dump();
}

// Release "sleep" (what campaigns ask for) never polls for its deadlines,
// even on a daemon with a fixed spin window, and still never releases early;
// "spin" on the same daemon polls before each one.
TEST(InjectorDelay, ReleaseSleepDelaysWithoutPolling) {
  NABLA_REQUIRE_ROOT_OR_SKIP();
  InjectorTestbed bed;
  bed.start_daemon({"--spin-us", "200"});
  constexpr int64_t kDelay = 2 * kMs;
  std::map<std::string, double> polled_s;
  for (const std::string release : {"spin", "sleep"}) {
    const double polled_before =
        bed.call("daemon.info", nlohmann::json::object()).at("timer").at("polled_s").get<double>();
    const auto started = bed.call("inject.start", {{"link", "udp 10.77.0.1 -> 10.77.0.2:9000"},
                                                   {"delay", "2ms"},
                                                   {"lease_s", 30},
                                                   {"release", release}});
    EXPECT_EQ(started.at("release"), release);
    const auto listed = bed.call("inject.list", nlohmann::json::object()).at("injections");
    ASSERT_EQ(listed.size(), 1u);
    EXPECT_EQ(listed[0].at("release"), release);
    const auto probes = run_udp_probes(bed, 9000, 1000, 2000.0);
    const auto stats = bed.call("inject.stats", {{"id", started.at("id")}});
    bed.call("inject.stop", {{"id", started.at("id")}});
    polled_s[release] =
        bed.call("daemon.info", nlohmann::json::object()).at("timer").at("polled_s").get<double>() -
        polled_before;
    ASSERT_EQ(lost(probes), 0u) << release;
    EXPECT_GE(delay_percentile(probes, 0.0), kDelay) << release << ": released early";
    EXPECT_EQ(stats.at("packets").get<uint64_t>(), probes.size()) << release;
    EXPECT_GE(stats.at("actual_delay_ns").at("min").get<double>(), static_cast<double>(kDelay))
        << release;
  }
  std::printf("polled: spin %.4f s, sleep %.4f s\n", polled_s["spin"], polled_s["sleep"]);
  // 1000 deadlines with a 200 us spin window each poll for tens of ms; a
  // sleeping release polls only when a pass ends past the next deadline.
  EXPECT_LT(polled_s["sleep"], polled_s["spin"] / 2);
}

TEST(InjectorDelay, Ipv6LinkIsDelayedOnlyOnTheLink) {
  NABLA_REQUIRE_ROOT_OR_SKIP();
  InjectorTestbed bed;
  bed.start_daemon();
  const auto id =
      bed.call("inject.start",
               {{"link", "udp [fd77::1]:* -> [fd77::2]:9000"}, {"delay", "5ms"}, {"lease_s", 30}})
          .at("id");
  // The rule lives in ip6tables (not iptables), in the daemon's own chain.
  const auto rules = bed.sender().run({"ip6tables-save"}).stdout_text;
  EXPECT_NE(rules.find("nabla:"), std::string::npos) << rules;
  EXPECT_NE(rules.find("fd77::2"), std::string::npos) << rules;
  std::vector<ProbeResult> off_link;
  CpuSteal steal;
  std::thread other([&] { off_link = run_udp_probes(bed, ProbeFamily::kIpv6, 9001, 200, 400.0); });
  const auto on_link = run_udp_probes(bed, ProbeFamily::kIpv6, 9000, 500, 1000.0);
  other.join();
  const auto stats = bed.call("inject.stats", {{"id", id}});
  bed.call("inject.stop", {{"id", id}});
  EXPECT_EQ(lost(on_link), 0u);
  EXPECT_GE(delay_percentile(on_link, 0.001), 5 * kMs);
  std::printf("machine %s\n", steal.describe().c_str());
  EXPECT_LE(delay_percentile(on_link, 0.5), 5 * kMs + kMs / 2 + (steal.calm() ? 0 : 2 * kMs));
  EXPECT_EQ(stats.at("packets").get<uint64_t>(), 500u);
  EXPECT_EQ(lost(off_link), 0u);
  EXPECT_LT(delay_percentile(off_link, 0.99), (steal.calm() ? 2 : 4) * kMs);  // vs >= 5 ms on it
  EXPECT_EQ(bed.sender().run({"ip6tables-save"}).stdout_text.find("nabla:"), std::string::npos);
}

}  // namespace
}  // namespace nabla::testing
