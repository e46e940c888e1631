// The interaction check (nabla/analysis/interaction.hh): with several square
// waves in one series and a term in the product of two links' delays, each
// link's bias is c * (the other link's step) / 2 for the pair's links and 0
// for the others; exactly without noise, and inside its interval at about
// the stated rate with noise. Least squares itself is checked on a closed
// form.
#include "nabla/analysis/interaction.hh"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "nabla/analysis/frequency_plan.hh"
#include "nabla/analysis/least_squares.hh"
#include "nabla/analysis/square_wave_synth.hh"

namespace nabla::analysis {
namespace {

TEST(LeastSquares, RecoversALineAndItsResidualVariance) {
  // y = 2 + 3x exactly, then with residuals +-1 alternating.
  const std::vector<double> ones(4, 1.0), x{0, 1, 2, 3};
  const auto exact = least_squares({ones, x}, {2, 5, 8, 11});
  ASSERT_TRUE(exact);
  EXPECT_NEAR(exact->beta[0], 2, 1e-12);
  EXPECT_NEAR(exact->beta[1], 3, 1e-12);
  EXPECT_NEAR(exact->rss, 0, 1e-12);
  const auto noisy = least_squares({ones, x}, {3, 4, 9, 10});
  ASSERT_TRUE(noisy);
  // Sxx = 5, mean x = 1.5: slope = sum((x - 1.5) y) / 5 = 13 / 5.
  EXPECT_NEAR(noisy->beta[1], 2.6, 1e-12);
  EXPECT_NEAR(noisy->variance_of({0, 1}), noisy->residual_variance() / 5.0, 1e-12);
  EXPECT_FALSE(least_squares({ones, ones}, {1, 2, 3, 4}));  // dependent columns
  EXPECT_FALSE(least_squares({}, {1, 2}));
}

struct Synthetic {
  std::vector<WaveInSeries> waves;
  std::vector<double> series;
};

constexpr std::size_t kBins = 256;
constexpr double kC = 2e-8;  // ns of response per ns of one delay per ns of the other

// Four links at a plan's frequencies, gradients 1, 3, 0, 1 and steps 4, 2,
// 6, 3 ms, links 0 and 1 interacting with kC; normal noise of `noise_ns`.
Synthetic synthesize(double noise_ns, std::uint64_t seed) {
  FrequencyPlanOptions o;
  o.bins = kBins;
  const auto plan = plan_frequencies(4, o);
  EXPECT_TRUE(plan);
  const double gradients[] = {1, 3, 0, 1}, steps[] = {4e6, 2e6, 6e6, 3e6};
  Synthetic s;
  s.series.assign(kBins, 2e6);
  std::vector<std::vector<double>> x;
  for (std::size_t l = 0; l < 4; ++l) {
    const double period = static_cast<double>(kBins) / static_cast<double>(plan->k[l]);
    const double phase = 0.37 * static_cast<double>(l + 1);
    s.waves.push_back({period, phase, steps[l]});
    x.push_back(square_wave_bin_means(kBins, period, phase, 1.0));
    for (std::size_t i = 0; i < kBins; ++i) s.series[i] += gradients[l] * steps[l] * x[l][i];
  }
  const auto product =
      square_wave_product_bin_means(kBins, s.waves[0].period_bins, s.waves[0].phase_bins,
                                    s.waves[1].period_bins, s.waves[1].phase_bins);
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> noise(0.0, noise_ns);
  for (std::size_t i = 0; i < kBins; ++i) {
    s.series[i] += kC * steps[0] * steps[1] * product[i] + (noise_ns > 0 ? noise(rng) : 0.0);
  }
  return s;
}

TEST(InteractionBiases, ExactWithoutNoise) {
  const Synthetic s = synthesize(0, 1);
  const auto b = interaction_biases(s.series, s.waves);
  ASSERT_TRUE(b);
  ASSERT_EQ(b->size(), 4u);
  EXPECT_NEAR((*b)[0].value, kC * 2e6 / 2, 1e-9);  // link 0, the other's step 2 ms: 0.02
  EXPECT_NEAR((*b)[1].value, kC * 4e6 / 2, 1e-9);  // link 1: 0.04
  EXPECT_NEAR((*b)[2].value, 0, 1e-9);
  EXPECT_NEAR((*b)[3].value, 0, 1e-9);
}

TEST(InteractionBiases, CoverTheTruthAtAboutTheirLevelWithNoise) {
  const double truth[] = {kC * 2e6 / 2, kC * 4e6 / 2, 0, 0};
  int covered = 0, total = 0;
  for (std::uint64_t seed = 0; seed < 200; ++seed) {
    const Synthetic s = synthesize(200'000, seed + 10);
    const auto b = interaction_biases(s.series, s.waves);
    ASSERT_TRUE(b);
    for (std::size_t l = 0; l < 4; ++l) {
      EXPECT_GT((*b)[l].standard_error, 0);
      covered += std::abs((*b)[l].value - truth[l]) <= 1.96 * (*b)[l].standard_error ? 1 : 0;
      ++total;
    }
  }
  const double coverage = static_cast<double>(covered) / total;
  EXPECT_GT(coverage, 0.90);
  EXPECT_LT(coverage, 0.99);
}

TEST(InteractionBiases, NoneWithOneWaveTooFewBinsOrNoStep) {
  const Synthetic s = synthesize(0, 2);
  EXPECT_FALSE(interaction_biases(s.series, {s.waves[0]}));
  EXPECT_FALSE(
      interaction_biases(std::vector<double>(s.series.begin(), s.series.begin() + 20), s.waves));
  std::vector<WaveInSeries> no_step = s.waves;
  no_step[2].delta_l_ns = 0;
  EXPECT_FALSE(interaction_biases(s.series, no_step));
}

}  // namespace
}  // namespace nabla::analysis
