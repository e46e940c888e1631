// Campaign arithmetic with literal inputs: bin width over types, the minimax
// k_d, rough gradients and the adaptive amplitude, window statistics, the
// time budget.
#include "nabla/campaign/math.hh"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

namespace {

using nabla::analysis::LatencyRecord;
using namespace nabla::campaign;

TEST(CampaignMath, BinWidthIsTheRarestTypes) {
  // Type 0 every 1 ms, type 1 every 4 ms (fixed gaps: sigma 0, m = k gaps).
  std::vector<LatencyRecord> r;
  for (int i = 0; i < 400; ++i) r.push_back({i * 1'000'000LL, 100, 0});
  for (int i = 0; i < 100; ++i) r.push_back({i * 4'000'000LL + 500, 100, 1});
  EXPECT_EQ(campaign_bin_width_ns(r, 5, {"/a", "/b"}), 20'000'000);
  EXPECT_EQ(campaign_bin_width_ns(r, 1, {"/a", "/b"}), 4'000'000);
  // A type without enough requests is named.
  try {
    campaign_bin_width_ns(r, 5, {"/a", "/b", "/c"});
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("type /c: only 0 requests"), std::string::npos);
  }
}

TEST(CampaignMath, ExpectedBinWidthForPoisson) {
  // k = 4 at 100 rps: (4 + 6) / 100 = 100 ms.
  EXPECT_EQ(expected_bin_width_ns(200, 0.5, 4), 100'000'000);
}

TEST(CampaignMath, KdMinimisesTheLargestPerTypeAmplitude) {
  nabla::analysis::TrainingResult a, b;
  a.amplitude_by_k_ns = {0, 5, 1, 9, 0};
  b.amplitude_by_k_ns = {0, 2, 6, 3, 0};
  // max per k: k1 5, k2 6, k3 9 -> k1.
  const KdChoice c = choose_k_d({a, b});
  EXPECT_EQ(c.k_d, 1);
  EXPECT_DOUBLE_EQ(c.amplitude_ns, 5);
  ASSERT_EQ(c.per_type_amplitude_ns.size(), 2u);
  EXPECT_DOUBLE_EQ(c.per_type_amplitude_ns[1], 2);
  b.amplitude_by_k_ns = {0, 0, 6, 3, 0};  // k1 is no candidate for b
  EXPECT_EQ(choose_k_d({a, b}).k_d, 2);
  EXPECT_THROW(choose_k_d({}), std::invalid_argument);
}

TEST(CampaignMath, RoughGradientFromOneCycle) {
  std::mt19937_64 rng(7);
  std::normal_distribution<double> noise(0, 50'000);  // 50 us
  std::vector<LatencyRecord> r;
  const std::int64_t start = 1'000'000'000, period = 400'000'000;
  // Type 0 sees 2 x 1 ms in the high half; type 1 nothing.
  for (int i = 0; i < 400; ++i) {
    const std::int64_t t = start + i * 1'000'000LL;
    const bool high = t < start + period / 2;
    r.push_back({t, static_cast<std::int64_t>(1e6 + (high ? 2e6 : 0) + noise(rng)), 0});
    r.push_back({t + 1, static_cast<std::int64_t>(1e6 + noise(rng)), 1});
  }
  r.push_back({start - 1, 99'000'000, 0});  // outside the cycle: ignored
  const RoughGradient g0 = rough_gradient(r, 0, start, period, 1e6);
  EXPECT_NEAR(g0.value, 2.0, 0.05);
  EXPECT_TRUE(g0.clear);
  EXPECT_EQ(g0.high_requests, 200u);
  EXPECT_EQ(g0.low_requests, 200u);
  const RoughGradient g1 = rough_gradient(r, 1, start, period, 1e6);
  EXPECT_NEAR(g1.value, 0.0, 0.05);
  EXPECT_FALSE(g1.clear);
  // Adaptive amplitude: type 0 wants 3 ms / 2 = 1.5 ms; type 1 is not clear.
  EXPECT_DOUBLE_EQ(adapted_amplitude_ns({3e6, 1e6}, {g0, g1}, 2e5, 5e6), 3e6 / g0.value);
  // A noisy type asking for 12 ms / 2 = 6 ms is held to a 5 ms swing: 2.5 ms.
  EXPECT_DOUBLE_EQ(adapted_amplitude_ns({12e6, 1e6}, {g0, g1}, 2e5, 5e6), 5e6 / g0.value);
  // None clear: the cap. Clamped below by the minimum.
  EXPECT_DOUBLE_EQ(adapted_amplitude_ns({3e6, 1e6}, {g1, g1}, 2e5, 5e6), 5e6);
  RoughGradient huge = g0;
  huge.value = 1000;
  EXPECT_DOUBLE_EQ(adapted_amplitude_ns({3e6}, {huge}, 2e5, 5e6), 2e5);
}

TEST(CampaignMath, WindowStatsAndDeltaL) {
  std::vector<LatencyRecord> r = {{0, 10, 0}, {5, 30, 0}, {9, 1000, 1}, {10, 500, 0}};
  const WindowStats w = window_stats(r, 0, 0, 10);
  EXPECT_EQ(w.requests, 2u);
  EXPECT_DOUBLE_EQ(w.mean_latency_ns, 20);
  EXPECT_DOUBLE_EQ(w.rate_rps(1'000'000'000), 2.0);
  EXPECT_DOUBLE_EQ(*delta_l_from_halves(10, 1.2e6, 12, 2e4), 1.18e6);
  EXPECT_DOUBLE_EQ(*delta_l_from_halves(10, 1.2e6, 0, 99), 1.2e6);
  EXPECT_FALSE(delta_l_from_halves(0, 0, 12, 2e4).has_value());
}

TEST(CampaignMath, CompletionRatioSeesASlowerService) {
  // 100 requests of type 0 sent 10 ms apart over [0, 1 s).
  std::vector<LatencyRecord> fast, slow;
  for (int i = 0; i < 100; ++i) {
    fast.push_back({i * 10'000'000LL, 1'000'000, 0});
    slow.push_back({i * 10'000'000LL, 1'000'000 + i * 2'000'000LL, 0});  // a growing backlog
  }
  // Fast: every request completes within the window except none (last at 991 ms).
  EXPECT_DOUBLE_EQ(completion_ratio(fast, 0, 0, 1'000'000'000), 1.0);
  // Slow: request i completes at 12i + 1 ms; those with 12i + 1 < 1000 (i <= 83) count.
  EXPECT_DOUBLE_EQ(completion_ratio(slow, 0, 0, 1'000'000'000), 0.84);
  EXPECT_DOUBLE_EQ(completion_ratio(fast, 1, 0, 1'000'000'000), 0.0);
}

TEST(CampaignMath, BudgetCountsEveryPhase) {
  // (9*64 + 2*(64 + 8)) bins of 10 ms + 5 warm-ups of 1 s + 3 s discovery.
  EXPECT_EQ(campaign_budget_ns(10'000'000, 64, 9, 2, 8, 1'000'000'000, 3'000'000'000),
            720LL * 10'000'000 + 5'000'000'000LL + 3'000'000'000LL);
}

}  // namespace

namespace {

nabla::analysis::GradientEstimate estimate(double value, double se, double q) {
  nabla::analysis::GradientEstimate e;
  e.value = value;
  e.standard_error = se;
  e.ci_low = value - q * se;
  e.ci_high = value + q * se;
  e.time_domain_value = value;
  e.phase_given = true;
  return e;
}

TEST(CampaignMath, CombinedEstimatesWeighByInverseVariance) {
  // w = 1/0.1^2 = 100 and 1/0.2^2 = 25: value (100*1 + 25*2)/125 = 1.2,
  // se = 1/sqrt(125); the wider of the two quantile factors (2.1) is kept.
  const std::vector<nabla::analysis::GradientEstimate> two = {estimate(1.0, 0.1, 2.0),
                                                              estimate(2.0, 0.2, 2.1)};
  const auto c = combine_estimates(two);
  EXPECT_NEAR(c.value, 1.2, 1e-12);
  EXPECT_NEAR(c.standard_error, 1.0 / std::sqrt(125.0), 1e-12);
  EXPECT_NEAR(c.ci_high - c.value, 2.1 / std::sqrt(125.0), 1e-12);
  EXPECT_NEAR(c.value - c.ci_low, 2.1 / std::sqrt(125.0), 1e-12);
  EXPECT_NEAR(c.time_domain_value, 1.2, 1e-12);
}

TEST(CampaignMath, CombiningEqualEstimatesNarrowsBySqrtTwo) {
  const std::vector<nabla::analysis::GradientEstimate> same = {estimate(3.0, 0.3, 2.0),
                                                               estimate(3.0, 0.3, 2.0)};
  const auto c = combine_estimates(same);
  EXPECT_NEAR(c.value, 3.0, 1e-12);
  EXPECT_NEAR(c.standard_error, 0.3 / std::sqrt(2.0), 1e-12);
  EXPECT_NEAR(c.ci_high - c.ci_low, 2 * 2.0 * 0.3 / std::sqrt(2.0), 1e-12);
  // One estimate is returned as it is.
  const auto one = combine_estimates(std::span(same).first(1));
  EXPECT_EQ(one.value, 3.0);
  EXPECT_EQ(one.ci_low, same[0].ci_low);
}

TEST(CampaignMath, CombinationIgnoresAnEstimateWithoutAnError) {
  // se = 0 (no noise bins could be read) carries no weight; all-zero keeps the first.
  const std::vector<nabla::analysis::GradientEstimate> v = {estimate(1.0, 0.0, 2.0),
                                                            estimate(2.0, 0.5, 2.0)};
  EXPECT_NEAR(combine_estimates(v).value, 2.0, 1e-12);
  const std::vector<nabla::analysis::GradientEstimate> none = {estimate(1.0, 0.0, 2.0),
                                                               estimate(2.0, 0.0, 2.0)};
  EXPECT_EQ(combine_estimates(none).value, 1.0);
  EXPECT_THROW(combine_estimates({}), std::invalid_argument);
}

TEST(CampaignMath, InverseVarianceWeightIsOneOverTheVariance) {
  EXPECT_DOUBLE_EQ(inverse_variance_weight(0.1), 100.0);
  EXPECT_DOUBLE_EQ(inverse_variance_weight(0.5), 4.0);
  EXPECT_EQ(inverse_variance_weight(0.0), 0.0);
  EXPECT_EQ(inverse_variance_weight(-1.0), 0.0);
  EXPECT_EQ(inverse_variance_weight(std::nan("")), 0.0);
}

TEST(CampaignMath, InverseVarianceMeanWeighsLikeTheGradient) {
  // Weights 100 and 25, as in CombinedEstimatesWeighByInverseVariance: the
  // amplitudes 1000 and 2000 combine to (100*1000 + 25*2000)/125 = 1200.
  const std::vector<double> amplitudes = {1000.0, 2000.0};
  const std::vector<double> errors = {0.1, 0.2};
  EXPECT_NEAR(*inverse_variance_mean(amplitudes, errors), 1200.0, 1e-9);
  // A value without a standard error carries no weight.
  const std::vector<double> no_errors = {0.0, 0.0};
  EXPECT_NEAR(*inverse_variance_mean(std::vector<double>{5.0, 9.0}, std::vector<double>{0.0, 0.3}),
              9.0, 1e-12);
  EXPECT_FALSE(inverse_variance_mean(amplitudes, no_errors).has_value());
  EXPECT_FALSE(inverse_variance_mean({}, {}).has_value());
  EXPECT_THROW(inverse_variance_mean(amplitudes, std::vector<double>{0.1}), std::invalid_argument);
}

}  // namespace
