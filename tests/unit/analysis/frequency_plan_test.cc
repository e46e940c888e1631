// The simultaneous schedule's frequency plan, and 8 links' gradients
// recovered from one series with a cross-term between two of them.
#include "nabla/analysis/frequency_plan.hh"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <stdexcept>
#include <vector>

#include "nabla/analysis/fft.hh"
#include "nabla/analysis/gradient.hh"
#include "nabla/analysis/square_wave_synth.hh"

namespace nabla::analysis {
namespace {

double period_of(std::size_t bins, std::size_t k) {
  return static_cast<double>(bins) / static_cast<double>(k);
}

TEST(SquareWaveProduct, IsTheOverlapOfTheHighParts) {
  // a: high on [0, 2), [4, 6); b: high on [1, 5) of 8.
  const auto p = square_wave_product_bin_means(8, 4.0, 0.0, 8.0, 1.0);
  const std::vector<double> expected{0, 1, 0, 0, 1, 0, 0, 0};
  ASSERT_EQ(p.size(), expected.size());
  for (std::size_t i = 0; i < p.size(); ++i) EXPECT_NEAR(p[i], expected[i], 1e-12) << i;
  // Fractional edges: a high on [0.5, 2.5); b high on [0, 4).
  const auto q = square_wave_product_bin_means(4, 4.0, 0.5, 8.0, 0.0);
  EXPECT_NEAR(q[0], 0.5, 1e-12);
  EXPECT_NEAR(q[1], 1.0, 1e-12);
  EXPECT_NEAR(q[2], 0.5, 1e-12);
  EXPECT_NEAR(q[3], 0.0, 1e-12);
}

TEST(SquareWaveProduct, OfAWaveWithItselfIsTheWave) {
  const auto w = square_wave_bin_means(64, 12.8, 0.3, 1.0);
  const auto p = square_wave_product_bin_means(64, 12.8, 0.3, 12.8, 0.3);
  for (std::size_t i = 0; i < w.size(); ++i) EXPECT_NEAR(p[i], w[i], 1e-12) << i;
}

// Every pair of planned waves, and every pair product, stays below the
// leak bound at every other planned frequency; and the plan never uses an
// avoided frequency or one with fewer bins per period than asked.
TEST(FrequencyPlan, PlannedWavesDoNotLeakIntoEachOther) {
  FrequencyPlanOptions o;
  o.bins = 256;
  o.avoid = {3, 5};
  const auto plan = plan_frequencies(8, o);
  ASSERT_TRUE(plan.has_value());
  ASSERT_EQ(plan->k.size(), 8u);
  for (std::size_t k : plan->k) {
    EXPECT_NE(k, 3u);
    EXPECT_NE(k, 5u);
    EXPECT_LE(k, o.bins / o.min_bins_per_period);
    EXPECT_GE(k, o.min_k);
  }
  for (std::size_t i : plan->k) {
    const double own = square_wave_min_coefficient_magnitude(o.bins, i, period_of(o.bins, i));
    for (std::size_t j : plan->k) {
      if (j == i) continue;
      const auto wj = rfft(square_wave_bin_means(o.bins, period_of(o.bins, j), 0.5, 1.0));
      EXPECT_LE(std::abs(wj[i]) / own, o.max_leak) << j << " into " << i;
      for (std::size_t l : plan->k) {
        if (l == i || l <= j) continue;
        const auto p = rfft(square_wave_product_bin_means(o.bins, period_of(o.bins, j), 0.0,
                                                          period_of(o.bins, l), 0.25));
        EXPECT_LE(std::abs(p[i]) / own, o.max_leak) << j << "x" << l << " into " << i;
      }
    }
  }
  EXPECT_LE(plan->worst_leak, o.max_leak);
  for (std::size_t k : plan->k) {
    EXPECT_TRUE(std::find(plan->occupied.begin(), plan->occupied.end(), k) != plan->occupied.end());
  }
}

// Pairs that would mix: 12 is 4's third harmonic (1/3 of a wave, less bin
// averaging); with 8 = 2 x 4 the product's line at 8 - 4 falls on 4; with
// 6 = 3/2 x 4 the line at 3 x 4 - 6 falls on 6. None is ever planned.
TEST(FrequencyPlan, NeverPairsFrequenciesThatMix) {
  FrequencyPlanOptions o;
  o.bins = 128;
  for (std::size_t other : {12u, 8u, 6u}) {
    o.preference = {4, other};
    EXPECT_FALSE(plan_frequencies(2, o).has_value()) << other;
  }
  o.preference = {4, 12, 8, 6, 3, 5};
  const auto plan = plan_frequencies(2, o);
  ASSERT_TRUE(plan.has_value());
  EXPECT_EQ(plan->k, (std::vector<std::size_t>{3, 5}));
}

TEST(FrequencyPlan, TooFewBinsGivesNoPlanAndTheSmallestSizeIsFound) {
  FrequencyPlanOptions o;
  o.bins = 64;
  EXPECT_FALSE(plan_frequencies(8, o).has_value());
  const auto sized = smallest_frequency_plan(8, o, 4096);
  ASSERT_TRUE(sized.has_value());
  EXPECT_GT(sized->bins, 64u);
  FrequencyPlanOptions half = o;
  half.bins = sized->bins / 2;
  EXPECT_FALSE(plan_frequencies(8, half).has_value());
  EXPECT_EQ(sized->plan.k.size(), 8u);
}

TEST(FrequencyPlan, RejectsBadOptions) {
  FrequencyPlanOptions o;
  o.bins = 100;
  EXPECT_THROW(plan_frequencies(2, o), std::invalid_argument);
  o.bins = 128;
  EXPECT_THROW(plan_frequencies(0, o), std::invalid_argument);
  o.min_bins_per_period = 2;
  EXPECT_THROW(plan_frequencies(2, o), std::invalid_argument);
  o.min_bins_per_period = 8;
  o.max_leak = 1.5;
  EXPECT_THROW(plan_frequencies(2, o), std::invalid_argument);
}

TEST(AmplitudeBudget, ScalesTogetherOnlyWhenOver) {
  EXPECT_EQ(fit_amplitudes_to_budget({1, 2, 3}, 10), (std::vector<double>{1, 2, 3}));
  const auto scaled = fit_amplitudes_to_budget({1, 2, 5}, 4);
  EXPECT_NEAR(scaled[0], 0.5, 1e-12);
  EXPECT_NEAR(scaled[1], 1.0, 1e-12);
  EXPECT_NEAR(scaled[2], 2.5, 1e-12);
  EXPECT_THROW(fit_amplitudes_to_budget({1, -1}, 4), std::invalid_argument);
  EXPECT_THROW(fit_amplitudes_to_budget({1}, 0), std::invalid_argument);
}

// ---- 8 links at once, with an interaction between links 0 and 1 ----

struct Simultaneous {
  std::size_t bins = 256;
  std::vector<double> gradient{0.5, 1.0, 2.0, 1.5, 3.0, 0.8, 1.2, 2.5};
  std::vector<double> amplitude_ns{2e6, 1.5e6, 1e6, 2e6, 1e6, 2e6, 1.5e6, 1e6};
  double cross_ns_per_ns2 = 1.0 / 10e6;  // response per ns of delay on 0 and 1 at once
  double noise_sigma_ns = 80e3;
  double mean_ns = 20e6;
};

// The gradient a simultaneous schedule measures: link 0's and 1's include
// the interaction at the other's mean injected delay (frequency_plan.hh).
double expected_gradient(const Simultaneous& s, std::size_t link) {
  if (link > 1) return s.gradient[link];
  return s.gradient[link] + s.cross_ns_per_ns2 * s.amplitude_ns[1 - link] / 2;
}

// A bin series with every link's wave (random common start offset within a
// bin, each link a little later than the first), the cross-term and white
// noise.
std::vector<double> simultaneous_series(const Simultaneous& s, const FrequencyPlan& plan,
                                        std::mt19937_64& rng) {
  std::uniform_real_distribution<double> start(0.0, 1.0);
  std::uniform_real_distribution<double> skew(0.0, 0.05);
  std::normal_distribution<double> noise(0.0, s.noise_sigma_ns);
  const double first = start(rng);
  std::vector<double> phase;
  for (std::size_t i = 0; i < plan.k.size(); ++i) phase.push_back(first + skew(rng));
  std::vector<double> y(s.bins, s.mean_ns);
  for (std::size_t i = 0; i < plan.k.size(); ++i) {
    const auto w = square_wave_bin_means(s.bins, period_of(s.bins, plan.k[i]), phase[i],
                                         s.gradient[i] * s.amplitude_ns[i]);
    for (std::size_t b = 0; b < s.bins; ++b) y[b] += w[b];
  }
  const auto both = square_wave_product_bin_means(s.bins, period_of(s.bins, plan.k[0]), phase[0],
                                                  period_of(s.bins, plan.k[1]), phase[1]);
  const double cross = s.cross_ns_per_ns2 * s.amplitude_ns[0] * s.amplitude_ns[1];
  for (std::size_t b = 0; b < s.bins; ++b) y[b] += cross * both[b] + noise(rng);
  return y;
}

TEST(SimultaneousGradients, EightLinksWithACrossTermRecoveredWithCalibratedIntervals) {
  const Simultaneous s;
  FrequencyPlanOptions o;
  o.bins = s.bins;
  const auto plan = plan_frequencies(s.gradient.size(), o);
  ASSERT_TRUE(plan.has_value());
  GradientOptions go;
  go.exclude_bins = plan->occupied;
  constexpr int kSeeds = 200;
  std::size_t covered = 0;
  std::vector<double> worst_relative_error(s.gradient.size(), 0.0);
  std::vector<double> error_sum(s.gradient.size(), 0.0);
  for (int seed = 1; seed <= kSeeds; ++seed) {
    std::mt19937_64 rng(static_cast<std::uint64_t>(seed));
    const auto y = simultaneous_series(s, *plan, rng);
    for (std::size_t i = 0; i < plan->k.size(); ++i) {
      const auto e = estimate_gradient_with_baseline_spectrum(y, {}, static_cast<int>(plan->k[i]),
                                                              s.amplitude_ns[i], go);
      const double truth = expected_gradient(s, i);
      worst_relative_error[i] =
          std::max(worst_relative_error[i], std::abs(e.value - truth) / truth);
      error_sum[i] += e.value - truth;
      covered += e.ci_low <= truth && truth <= e.ci_high ? 1 : 0;
    }
  }
  for (std::size_t i = 0; i < s.gradient.size(); ++i) {
    EXPECT_LT(worst_relative_error[i], 0.05) << "link " << i << " k " << plan->k[i];
    // No leak: the mean error over the seeds is well inside one seed's.
    EXPECT_LT(std::abs(error_sum[i] / kSeeds) / expected_gradient(s, i), 0.005) << "link " << i;
  }
  const double coverage =
      static_cast<double>(covered) / static_cast<double>(kSeeds * s.gradient.size());
  EXPECT_GE(coverage, 0.90);
  EXPECT_LE(coverage, 0.99);
}

// Without the plan (every link on the same ladder of frequencies 4, 12, ...
// with odd harmonics colliding) the same estimator is biased: the test
// above can fail.
TEST(SimultaneousGradients, CollidingFrequenciesAreBiased) {
  Simultaneous s;
  s.cross_ns_per_ns2 = 0;
  s.noise_sigma_ns = 1.0;
  FrequencyPlan colliding;
  colliding.k = {4, 12, 20, 28, 5, 15, 25, 9};
  std::mt19937_64 rng(1);
  const auto y = simultaneous_series(s, colliding, rng);
  const auto e = estimate_gradient_with_baseline_spectrum(y, {}, 12, s.amplitude_ns[1]);
  EXPECT_GT(std::abs(e.value - s.gradient[1]) / s.gradient[1], 0.05);
}

}  // namespace
}  // namespace nabla::analysis
