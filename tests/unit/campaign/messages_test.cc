// Messages per transaction from segment counts (nabla/campaign/messages.hh):
// one type is the ratio of segments to requests, several types are
// recovered exactly by least squares on noise-free counts and within their
// intervals at about the stated rate on noisy ones; too few intervals or a
// type without requests give no estimate.
#include "nabla/campaign/messages.hh"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

namespace nabla::campaign {
namespace {

constexpr std::int64_t kIntervalNs = 500'000'000;

struct Observed {
  std::vector<SegmentCount> counts;
  std::vector<analysis::LatencyRecord> records;
};

// `intervals` intervals of kIntervalNs from t = 0; in each, a random number
// of requests per type (sent inside it), and segments = sum over types of
// per_type[t] * requests + noise.
Observed observe(const std::vector<double>& per_type, std::size_t intervals, double noise_sd,
                 std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::poisson_distribution<int> requests(40);
  std::normal_distribution<double> noise(0.0, noise_sd);
  Observed o;
  double segments = 1000;  // what the flow counted before the window
  o.counts.push_back({0, static_cast<std::uint64_t>(segments)});
  for (std::size_t j = 0; j < intervals; ++j) {
    const std::int64_t start = static_cast<std::int64_t>(j) * kIntervalNs;
    for (std::size_t t = 0; t < per_type.size(); ++t) {
      const int n = requests(rng);
      for (int i = 0; i < n; ++i) {
        o.records.push_back(
            {start + (i + 1) * kIntervalNs / (n + 2), 1'000'000, static_cast<std::int32_t>(t)});
      }
      segments += per_type[t] * n;
    }
    segments += noise_sd > 0 ? std::round(noise(rng)) : 0.0;
    o.counts.push_back({start + kIntervalNs, static_cast<std::uint64_t>(std::llround(segments))});
  }
  return o;
}

std::int64_t end_of(std::size_t intervals) {
  return static_cast<std::int64_t>(intervals) * kIntervalNs;
}

TEST(MessagesPerTransaction, OneTypeIsSegmentsOverRequests) {
  const Observed o = observe({2.0}, 10, 0, 1);
  const auto m = messages_per_transaction(o.counts, o.records, 1, 0, end_of(10), 0.95);
  ASSERT_EQ(m.size(), 1u);
  ASSERT_TRUE(m[0]);
  EXPECT_DOUBLE_EQ(m[0]->value, 2.0);
  EXPECT_NEAR(m[0]->ci_low, 2.0, 1e-12);
  EXPECT_NEAR(m[0]->ci_high, 2.0, 1e-12);
}

TEST(MessagesPerTransaction, SeveralTypesAreRecoveredExactlyWithoutNoise) {
  const Observed o = observe({1.0, 3.0, 0.0}, 12, 0, 2);
  const auto m = messages_per_transaction(o.counts, o.records, 3, 0, end_of(12), 0.95);
  ASSERT_EQ(m.size(), 3u);
  const double truth[] = {1.0, 3.0, 0.0};
  for (std::size_t t = 0; t < 3; ++t) {
    ASSERT_TRUE(m[t]) << t;
    EXPECT_NEAR(m[t]->value, truth[t], 1e-9) << t;
    EXPECT_NEAR(m[t]->standard_error, 0.0, 1e-6) << t;
  }
}

TEST(MessagesPerTransaction, NoisyCountsKeepTheTruthInsideTheIntervalAtAboutTheLevel) {
  int covered = 0, total = 0;
  for (std::uint64_t seed = 0; seed < 200; ++seed) {
    const Observed o = observe({1.0, 3.0}, 10, 8.0, seed + 100);
    const auto m = messages_per_transaction(o.counts, o.records, 2, 0, end_of(10), 0.95);
    const double truth[] = {1.0, 3.0};
    for (std::size_t t = 0; t < 2; ++t) {
      ASSERT_TRUE(m[t]);
      EXPECT_GT(m[t]->standard_error, 0);
      covered += (m[t]->ci_low <= truth[t] && truth[t] <= m[t]->ci_high) ? 1 : 0;
      ++total;
    }
  }
  const double coverage = static_cast<double>(covered) / total;
  EXPECT_GT(coverage, 0.88);
  EXPECT_LT(coverage, 0.995);
}

// A message count is never negative: with a type that crosses the link not
// at all and noisy counts, the unconstrained fit would go below 0 about half
// the time; the estimate and its interval stay in [0, inf) and still cover
// the truth at about the level.
TEST(MessagesPerTransaction, SeveralTypesStayInThePhysicalRange) {
  int covered = 0, total = 0, held_at_zero = 0;
  for (std::uint64_t seed = 0; seed < 200; ++seed) {
    const Observed o = observe({1.0, 0.0}, 10, 8.0, seed + 500);
    const auto m = messages_per_transaction(o.counts, o.records, 2, 0, end_of(10), 0.95);
    const double truth[] = {1.0, 0.0};
    for (std::size_t t = 0; t < 2; ++t) {
      ASSERT_TRUE(m[t]);
      EXPECT_GE(m[t]->value, 0.0) << seed;
      EXPECT_GE(m[t]->ci_low, 0.0) << seed;
      EXPECT_LE(m[t]->ci_low, m[t]->value) << seed;
      EXPECT_LE(m[t]->value, m[t]->ci_high) << seed;
      covered += (m[t]->ci_low <= truth[t] && truth[t] <= m[t]->ci_high) ? 1 : 0;
      ++total;
    }
    held_at_zero += m[1]->value == 0.0 ? 1 : 0;
  }
  EXPECT_GT(held_at_zero, 20);  // the constraint was exercised
  const double coverage = static_cast<double>(covered) / total;
  EXPECT_GT(coverage, 0.88);
  EXPECT_LE(coverage, 1.0);
}

TEST(MessagesPerTransaction, OnlyTheCountsInsideTheWindowCount) {
  // Outside the window the link carried 10 segments per request.
  Observed o = observe({2.0}, 10, 0, 3);
  o.counts.push_back({end_of(10) + kIntervalNs, o.counts.back().segments + 400});
  o.records.push_back({end_of(10) + 1, 1, 0});
  const auto m = messages_per_transaction(o.counts, o.records, 1, 0, end_of(10), 0.95);
  ASSERT_TRUE(m[0]);
  EXPECT_DOUBLE_EQ(m[0]->value, 2.0);
}

TEST(MessagesPerTransaction, TooFewIntervalsOrNoRequestsGiveNoEstimate) {
  const Observed one = observe({2.0}, 1, 0, 4);
  EXPECT_FALSE(messages_per_transaction(one.counts, one.records, 1, 0, end_of(1), 0.95)[0]);
  // Two types need three intervals.
  const Observed two = observe({1.0, 2.0}, 2, 0, 5);
  const auto m2 = messages_per_transaction(two.counts, two.records, 2, 0, end_of(2), 0.95);
  EXPECT_FALSE(m2[0]);
  EXPECT_FALSE(m2[1]);
  // A type nobody sent has no estimate; the other is then a plain ratio.
  const Observed lone = observe({2.0}, 6, 0, 6);
  const auto m3 = messages_per_transaction(lone.counts, lone.records, 2, 0, end_of(6), 0.95);
  ASSERT_TRUE(m3[0]);
  EXPECT_DOUBLE_EQ(m3[0]->value, 2.0);
  EXPECT_FALSE(m3[1]);
  EXPECT_FALSE(messages_per_transaction({}, lone.records, 1, 0, end_of(6), 0.95)[0]);
}

TEST(MessagesPerTransaction, PhasesCombineByInverseVariance) {
  EXPECT_FALSE(combine_messages({std::nullopt, std::nullopt}));
  const MessagesPerTxn a{2.0, 0.1, 1.8, 2.2};
  const MessagesPerTxn b{3.0, 0.2, 2.5, 3.5};
  const auto only = combine_messages({std::nullopt, a});
  ASSERT_TRUE(only);
  EXPECT_DOUBLE_EQ(only->value, 2.0);
  const auto both = combine_messages({a, b});
  ASSERT_TRUE(both);
  EXPECT_NEAR(both->value, (2.0 / 0.01 + 3.0 / 0.04) / (1 / 0.01 + 1 / 0.04), 1e-12);
  EXPECT_NEAR(both->standard_error, 1 / std::sqrt(1 / 0.01 + 1 / 0.04), 1e-12);
  // The widest t factor of the two (b: 0.5 / 0.2).
  EXPECT_NEAR(both->ci_high - both->value, 2.5 * both->standard_error, 1e-12);
  // Two phases of a type that does not cross the link: the combined
  // interval stays in [0, inf), as each phase's does.
  const auto none = combine_messages({MessagesPerTxn{0.0, 0.02, 0.0, 0.04},
                                      MessagesPerTxn{0.01, 0.02, 0.0, 0.05}});
  ASSERT_TRUE(none);
  EXPECT_GE(none->value, 0.0);
  EXPECT_EQ(none->ci_low, 0.0);
  EXPECT_GT(none->ci_high, none->value);
}

TEST(MessagesPerTransaction, WaitsNotHopsNeedsBothIntervalsToDisagree) {
  const MessagesPerTxn two{2.0, 0.05, 1.9, 2.1};
  EXPECT_FALSE(waits_not_hops(2.05, 1.95, 2.15, two));  // agree
  EXPECT_TRUE(waits_not_hops(6.0, 5.5, 6.5, two));      // the gradient is far above
  EXPECT_TRUE(waits_not_hops(0.0, -0.1, 0.1, two));     // far below (an async call)
  // Further apart than the gradient's half-width but inside the messages' CI.
  EXPECT_FALSE(waits_not_hops(2.08, 2.07, 2.09, two));
  // Outside the messages' CI but the gradient's CI is wide enough to reach.
  EXPECT_FALSE(waits_not_hops(2.5, 1.5, 3.5, two));
}

}  // namespace
}  // namespace nabla::campaign
