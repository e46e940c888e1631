#include "nabla/common/wakeup_lateness.hh"

#include <gtest/gtest.h>

#include <stdexcept>
#include <vector>

namespace nabla::common {
namespace {

TEST(NearestRankQuantile, MatchesTheDefinition) {
  const std::vector<int64_t> v = {5, 1, 4, 2, 3};
  EXPECT_EQ(nearest_rank_quantile(v, 0.0), 1);
  EXPECT_EQ(nearest_rank_quantile(v, 0.2), 1);   // ceil(1.0) = rank 1
  EXPECT_EQ(nearest_rank_quantile(v, 0.21), 2);  // ceil(1.05) = rank 2
  EXPECT_EQ(nearest_rank_quantile(v, 0.5), 3);
  EXPECT_EQ(nearest_rank_quantile(v, 1.0), 5);
  EXPECT_EQ(nearest_rank_quantile({}, 0.5), 0);
}

TEST(WakeupLateness, LeadIsZeroBeforeAnyRecord) {
  WakeupLateness w;
  EXPECT_EQ(w.lead_ns(), 0);
  EXPECT_EQ(w.summary().samples, 0u);
}

TEST(WakeupLateness, LeadIsTheQuantileOfTheWindow) {
  WakeupLateness w(
      {.window = 100, .lead_quantile = 0.95, .max_lead_ns = 1'000'000, .refresh_every = 1});
  for (int i = 1; i <= 100; ++i) w.record(i * 1000);  // 1..100 µs
  EXPECT_EQ(w.lead_ns(), 95'000);
  const auto s = w.summary();
  EXPECT_EQ(s.samples, 100u);
  EXPECT_EQ(s.recorded, 100u);
  EXPECT_EQ(s.p50_ns, 50'000);
  EXPECT_EQ(s.p90_ns, 90'000);
  EXPECT_EQ(s.p99_ns, 99'000);
  EXPECT_EQ(s.max_ns, 100'000);
  EXPECT_EQ(s.lead_ns, 95'000);
}

TEST(WakeupLateness, OldWakeupsLeaveTheWindow) {
  WakeupLateness w(
      {.window = 10, .lead_quantile = 0.9, .max_lead_ns = 1'000'000, .refresh_every = 1});
  for (int i = 0; i < 10; ++i) w.record(200'000);  // a noisy minute
  EXPECT_EQ(w.lead_ns(), 200'000);
  for (int i = 0; i < 10; ++i) w.record(20'000);  // the host calms down
  EXPECT_EQ(w.lead_ns(), 20'000);
  EXPECT_EQ(w.summary().recorded, 20u);
}

TEST(WakeupLateness, LeadIsCapped) {
  WakeupLateness w({.window = 8, .lead_quantile = 0.5, .max_lead_ns = 300'000, .refresh_every = 1});
  for (int i = 0; i < 8; ++i) w.record(5'000'000);
  EXPECT_EQ(w.lead_ns(), 300'000);
  EXPECT_EQ(w.summary().p50_ns, 5'000'000);  // the figures are not capped
}

TEST(WakeupLateness, EarlyWakeupsCountAsOnTime) {
  WakeupLateness w(
      {.window = 4, .lead_quantile = 1.0, .max_lead_ns = 1'000'000, .refresh_every = 1});
  for (int i = 0; i < 4; ++i) w.record(-7);
  EXPECT_EQ(w.lead_ns(), 0);
}

TEST(WakeupLateness, RefreshesEveryNRecordsAfterTheFirstOnes) {
  WakeupLateness w(
      {.window = 64, .lead_quantile = 1.0, .max_lead_ns = 1'000'000, .refresh_every = 4});
  for (int i = 0; i < 4; ++i) w.record(10'000);  // first records refresh at once
  EXPECT_EQ(w.lead_ns(), 10'000);
  w.record(50'000);
  w.record(50'000);
  w.record(50'000);
  EXPECT_EQ(w.lead_ns(), 10'000);  // three records: not yet
  w.record(50'000);
  EXPECT_EQ(w.lead_ns(), 50'000);
}

TEST(WakeupLateness, RejectsBadOptions) {
  EXPECT_THROW(WakeupLateness({.window = 0}), std::invalid_argument);
  EXPECT_THROW(WakeupLateness({.lead_quantile = 1.5}), std::invalid_argument);
  EXPECT_THROW(WakeupLateness({.max_lead_ns = -1}), std::invalid_argument);
}

// Real sleeps: a wake-up is never before its deadline, so every recorded
// lateness is >= 0 and the probe records exactly `count` wake-ups.
TEST(ProbeWakeupLateness, RecordsOneNonNegativeLatenessPerSleep) {
  WakeupLateness w({.window = 32});
  probe_wakeup_lateness(w, 20, 200'000);
  const auto s = w.summary();
  EXPECT_EQ(s.recorded, 20u);
  EXPECT_GE(s.p50_ns, 0);
  EXPECT_LE(s.p50_ns, s.p99_ns);
  EXPECT_GE(w.lead_ns(), 0);
  EXPECT_LE(w.lead_ns(), w.options().max_lead_ns);
}

}  // namespace
}  // namespace nabla::common
