// nabla-injectd faults end to end: Bernoulli loss, partition, corruption
// (with and without checksum fix) and duplication, each checked at the
// receiver against the binomial law or the daemon's own counters.
#include <gtest/gtest.h>

#include <cmath>

#include "nabla/testbed/injector_testbed.hh"
#include "nabla_test_support.hh"

namespace nabla::testing {
namespace {

using testbed::g_unknown_datagrams;
using testbed::InjectorTestbed;
using testbed::lost;
using testbed::ProbeFamily;
using testbed::run_udp_probes;

using nlohmann::json;

json start(InjectorTestbed& bed, const json& faults) {
  return bed.call("inject.start", {{"link", "udp 10.77.0.1 -> 10.77.0.2:9000"},
                                   {"faults", faults},
                                   {"lease_s", 30},
                                   {"seed", 2026}});
}

TEST(InjectorFaults, Bernoulli10PercentLossOver20kPacketsIsBinomial) {
  NABLA_REQUIRE_ROOT_OR_SKIP();
  InjectorTestbed bed;
  bed.start_daemon();
  const auto id = start(bed, {{"loss", {{"p", 0.1}}}}).at("id");
  const auto probes = run_udp_probes(bed, 9000, 20'000, 10'000.0);
  const auto stats = bed.call("inject.stats", {{"id", id}});
  const double n = 20'000;
  const double sd = std::sqrt(n * 0.1 * 0.9);
  const auto missing = static_cast<double>(lost(probes));
  EXPECT_GE(missing, n * 0.1 - 3.2905 * sd);
  EXPECT_LE(missing, n * 0.1 + 3.2905 * sd);
  // Every loss is the daemon's (none from elsewhere).
  EXPECT_EQ(stats.at("dropped").get<double>(), missing);
  EXPECT_EQ(stats.at("packets").get<double>(), n);
}

TEST(InjectorFaults, PartitionDropsEverythingWhileHighNothingWhileLow) {
  NABLA_REQUIRE_ROOT_OR_SKIP();
  InjectorTestbed bed;
  bed.start_daemon();
  start(bed, {{"partition", {{"wave", {{"kind", "square"}, {"period", "400ms"}}}}}});
  const auto probes = run_udp_probes(bed, 9000, 1200, 1000.0);
  size_t transitions = 0;
  for (size_t i = 1; i < probes.size(); ++i) {
    transitions += (probes[i].copies == 0) != (probes[i - 1].copies == 0) ? 1 : 0;
  }
  // 1.2 s = 3 periods: at most 6 state changes, so no packet crossed while
  // high and none was lost while low.
  EXPECT_GE(transitions, 4u);
  EXPECT_LE(transitions, 6u);
  EXPECT_NEAR(static_cast<double>(lost(probes)), 600.0, 15.0);
}

TEST(InjectorFaults, CorruptionWithoutChecksumFixIsDroppedByTheReceiverWithFixDelivered) {
  NABLA_REQUIRE_ROOT_OR_SKIP();
  InjectorTestbed bed;
  bed.start_daemon();
  const auto broken = start(bed, {{"corrupt", {{"probability", 0.1}, {"fix_checksum", false}}}});
  const auto a = run_udp_probes(bed, 9000, 2000, 2000.0);
  const auto sa = bed.call("inject.stop", {{"id", broken.at("id")}}).at("stats");
  const auto corrupted = sa.at("corrupted").get<double>();
  EXPECT_NEAR(corrupted, 200.0, 3.2905 * std::sqrt(2000 * 0.1 * 0.9));
  size_t delivered_damaged = 0;
  for (const auto& p : a) delivered_damaged += p.copies > 0 && !p.intact ? 1 : 0;
  // Bad checksums: dropped by UDP.
  EXPECT_EQ(static_cast<double>(lost(a)), corrupted)
      << "delivered damaged " << delivered_damaged << "; stats " << sa.dump();

  const auto fixed = start(bed, {{"corrupt", {{"probability", 0.1}, {"fix_checksum", true}}}});
  const auto b = run_udp_probes(bed, 9000, 2000, 2000.0);
  const size_t unknown = g_unknown_datagrams;
  const auto sb = bed.call("inject.stop", {{"id", fixed.at("id")}}).at("stats");
  size_t damaged = 0;
  size_t extra_copies = 0;
  for (const auto& p : b) {
    damaged += p.intact ? 0 : 1;
    extra_copies += p.copies > 1 ? static_cast<size_t>(p.copies - 1) : 0;
  }
  // Delivered: a datagram whose sequence number was hit shows up as another
  // (extra copy) or an unknown sequence number, and its own seq as lost.
  EXPECT_EQ(lost(b), unknown + extra_copies);
  // A flip lands in the 52 filler bytes (damaged), the 4-byte seq (lost seq)
  // or the 8-byte stamp (invisible): 56 of 64 bytes are checked.
  const auto hits = static_cast<double>(damaged + lost(b));
  EXPECT_NEAR(hits, sb.at("corrupted").get<double>() * 56.0 / 64.0, 30.0);
  EXPECT_GT(damaged, 100u);
}

TEST(InjectorFaults, DuplicatesArriveTwice) {
  NABLA_REQUIRE_ROOT_OR_SKIP();
  InjectorTestbed bed;
  bed.start_daemon();
  const auto id = start(bed, {{"duplicate", {{"probability", 0.1}}}}).at("id");
  const auto probes = run_udp_probes(bed, 9000, 2000, 2000.0);
  const auto stats = bed.call("inject.stats", {{"id", id}});
  size_t twice = 0;
  for (const auto& p : probes) twice += p.copies == 2 ? 1 : 0;
  EXPECT_EQ(lost(probes), 0u);
  EXPECT_EQ(static_cast<double>(twice), stats.at("duplicated").get<double>());
  EXPECT_NEAR(static_cast<double>(twice), 200.0, 3.2905 * std::sqrt(2000 * 0.1 * 0.9));
  // The copies are not queued again (marked): packets == originals.
  EXPECT_EQ(stats.at("packets").get<double>(), 2000.0);
}

TEST(InjectorFaults, DuplicatesArriveTwiceOnIpv6) {
  NABLA_REQUIRE_ROOT_OR_SKIP();
  InjectorTestbed bed;
  bed.start_daemon();
  const auto id = bed.call("inject.start", {{"link", "udp [fd77::1]:* -> [fd77::2]:9000"},
                                            {"faults", {{"duplicate", {{"probability", 0.2}}}}},
                                            {"lease_s", 30},
                                            {"seed", 2026}})
                      .at("id");
  const auto probes = run_udp_probes(bed, ProbeFamily::kIpv6, 9000, 1000, 2000.0);
  const auto stats = bed.call("inject.stats", {{"id", id}});
  size_t twice = 0;
  size_t damaged = 0;
  for (const auto& p : probes) {
    twice += p.copies == 2 ? 1 : 0;
    damaged += p.intact ? 0 : 1;
  }
  EXPECT_EQ(lost(probes), 0u);
  EXPECT_EQ(damaged, 0u);  // the copy re-sent through the raw IPv6 socket is whole
  EXPECT_EQ(static_cast<double>(twice), stats.at("duplicated").get<double>());
  EXPECT_NEAR(static_cast<double>(twice), 200.0, 3.2905 * std::sqrt(1000 * 0.2 * 0.8));
  EXPECT_EQ(stats.at("packets").get<double>(), 1000.0);  // copies are not queued again
}

}  // namespace
}  // namespace nabla::testing
