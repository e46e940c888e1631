#include "nabla/analysis/gradient.hh"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <numbers>
#include <random>
#include <stdexcept>
#include <vector>

#include "nabla/analysis/binning.hh"
#include "nabla/analysis/fft.hh"
#include "nabla/analysis/square_wave_synth.hh"

namespace nabla::analysis {
namespace {

// ---- The square wave as a binned series sees it (paper equation 3) ----

// Literals: k/sin(pi/2n) (the paper's closed form) and k*cos(pi/2n)/sin(pi/2n)
// (numpy: the rfft of a 10000x oversampled wave averaged per bin, 0.5 bin off).
TEST(SquareWave, PaperClosedFormHoldsOnlyForEdgesOnBinBoundaries) {
  // N = 128, k_d = 4: 2n = 32 bins per period.
  EXPECT_NEAR(std::abs(square_wave_coefficient(128, 4, 32, 0.0)), 40.80918894951331, 1e-9);
  EXPECT_NEAR(std::abs(square_wave_coefficient(128, 4, 32, 7.0)), 40.80918894951331, 1e-9);
  EXPECT_NEAR(std::abs(square_wave_coefficient(128, 4, 32, 0.5)), 40.61268155043544, 1e-9);
  // k_d = 16: 2n = 8, the paper's minimum bins per period; -7.6% at half a bin.
  EXPECT_NEAR(std::abs(square_wave_coefficient(128, 16, 8, 3.0)), 41.81001487604405, 1e-9);
  EXPECT_NEAR(std::abs(square_wave_coefficient(128, 16, 8, 3.5)), 38.62741699796952, 1e-9);
  EXPECT_NEAR(square_wave_min_coefficient_magnitude(128, 16, 8), 38.62741699796952, 1e-6);
}

// The reduced phase span of the minimum search agrees with brute force.
TEST(SquareWave, MinimumOverPhaseMatchesBruteForce) {
  for (std::size_t n : {128u, 1024u}) {
    for (std::size_t k : {1u, 3u, 6u, 10u, 16u, 27u}) {
      const double period = static_cast<double>(n) / static_cast<double>(k);
      double brute = std::numeric_limits<double>::infinity();
      for (int g = 0; g <= 2000; ++g) {
        brute = std::min(brute, std::abs(square_wave_coefficient(n, k, period, g / 2000.0)));
      }
      const double got = square_wave_min_coefficient_magnitude(n, k, period);
      EXPECT_GE(got, brute * (1 - 1e-12)) << n << " " << k;
      EXPECT_NEAR(got, brute, 1e-5 * brute) << n << " " << k;
    }
  }
}

TEST(SquareWave, BinMeansAndTheirSpectrum) {
  const auto w = square_wave_bin_means(8, 4.0, 0.25, 2.0);
  // high on [0.25, 2.25) and [4.25, 6.25)
  const std::vector<double> expected{1.5, 2.0, 0.5, 0.0, 1.5, 2.0, 0.5, 0.0};
  ASSERT_EQ(w.size(), expected.size());
  for (std::size_t i = 0; i < w.size(); ++i) EXPECT_NEAR(w[i], expected[i], 1e-12) << i;
  // The model coefficient is the rfft of the bin means.
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<double> phase(0.0, 100.0);
  for (std::size_t n : {8u, 128u, 1024u}) {
    for (std::size_t k : {1u, 2u, 3u, 4u, 7u}) {
      if (n < 4 * k) continue;
      const double period = static_cast<double>(n) / static_cast<double>(k);
      for (int rep = 0; rep < 20; ++rep) {
        const double theta = rep < 3 ? rep * 0.5 : phase(rng);
        const auto series = square_wave_bin_means(n, period, theta, 1.0);
        const auto c = square_wave_coefficient(n, k, period, theta);
        EXPECT_NEAR(std::abs(rfft(series)[k] - c), 0.0, 1e-9) << n << " " << k << " " << theta;
      }
    }
  }
  EXPECT_THROW(square_wave_bin_means(8, 0.0, 0.0, 1.0), std::invalid_argument);
}

// ---- Noise-free: the estimator is exact at any phase, eq. 5 is not ----

TEST(Gradient, ExactOnNoiseFreeWaveAtAnyPhase) {
  constexpr double kDelta = 2e6;  // 2 ms
  for (int k_d : {4, 16, 3}) {
    const double period = 128.0 / k_d;
    for (double theta : {0.0, 0.5, 5.25, 11.8}) {
      auto series = square_wave_bin_means(128, period, theta, 1.5 * kDelta);
      for (double& x : series) x += 1e7;  // 10 ms base response time
      const auto est = estimate_gradient(series, std::nullopt, k_d, kDelta);
      EXPECT_NEAR(est.value, 1.5, 1e-6) << k_d << " " << theta;
      EXPECT_NEAR(est.time_domain_value, 1.5, 1e-6) << k_d << " " << theta;
      EXPECT_TRUE(est.detected);
      GradientOptions given;
      given.phase_bins = theta;
      EXPECT_NEAR(estimate_gradient(series, std::nullopt, k_d, kDelta, given).value, 1.5, 1e-9);
    }
  }
  // Half a bin off at 8 bins per period, equation 5 reads cos(pi/8) low.
  auto series = square_wave_bin_means(128, 8.0, 2.5, kDelta);
  const auto est = estimate_gradient(series, std::nullopt, 16, kDelta);
  EXPECT_NEAR(est.eq5_value, 0.9238795325112866, 1e-9);
  EXPECT_NEAR(est.value, 1.0, 1e-6);
  EXPECT_NEAR(est.phase_bins, 2.5, 1e-3);
}

TEST(Gradient, RejectsBadInput) {
  const std::vector<double> s128(128, 1.0), s100(100, 1.0);
  EXPECT_THROW(estimate_gradient(s100, std::nullopt, 4, 1.0), std::invalid_argument);
  EXPECT_THROW(estimate_gradient(std::vector<double>(4, 1.0), std::nullopt, 1, 1.0),
               std::invalid_argument);
  EXPECT_THROW(estimate_gradient(s128, std::nullopt, 0, 1.0), std::invalid_argument);
  EXPECT_THROW(estimate_gradient(s128, std::nullopt, 33, 1.0), std::invalid_argument);
  EXPECT_THROW(estimate_gradient(s128, std::nullopt, 4, 0.0), std::invalid_argument);
  EXPECT_THROW(estimate_gradient(s128, std::nullopt, 4, 1.0, 1.0), std::invalid_argument);
  const std::vector<double> short_baseline(64, 1.0);
  EXPECT_THROW(estimate_gradient(s128, short_baseline, 4, 1.0), std::invalid_argument);
}

TEST(Gradient, KdForPeriod) {
  EXPECT_EQ(k_d_for_period(128, 50'000'000, 1'600'000'000), 4);
  EXPECT_EQ(k_d_for_period(128, 50'000'000, 6'400'000'000), 1);
  EXPECT_EQ(k_d_for_period(128, 50'000'000, 200'000'000), 32);
  EXPECT_THROW(k_d_for_period(128, 50'000'000, 1'500'000'000), std::invalid_argument);
  EXPECT_THROW(k_d_for_period(128, 50'000'000, 150'000'000), std::invalid_argument);  // 3 bins
  EXPECT_THROW(k_d_for_period(128, 50'000'000, 12'800'000'000), std::invalid_argument);
  EXPECT_THROW(k_d_for_period(128, 0, 1), std::invalid_argument);
}

// A series sitting on a 1e9 ns offset gives the same gradient.
TEST(Gradient, OffsetInvariant) {
  auto series = square_wave_bin_means(128, 32.0, 3.3, 2e6);
  std::mt19937_64 rng(4);
  std::normal_distribution<double> noise(0.0, 1e5);
  for (double& x : series) x += noise(rng);
  auto shifted = series;
  for (double& x : shifted) x += 1e9;
  const auto a = estimate_gradient(series, std::nullopt, 4, 2e6);
  const auto b = estimate_gradient(shifted, std::nullopt, 4, 2e6);
  EXPECT_NEAR(a.value, b.value, 1e-6);
  EXPECT_NEAR(a.ci_high, b.ci_high, 1e-6);
  EXPECT_NEAR(a.time_domain_value, b.time_domain_value, 1e-6);
}

// ---- Property: square wave injected into a noisy request stream ----

struct Synthetic {
  std::vector<double> series;  // binned mean response time, ns
  double phase_bins = 0;       // rising edge of the injected wave
};

constexpr std::int64_t kBinNs = 50'000'000;  // 50 ms bins
constexpr std::size_t kBins = 128;
constexpr int kKd = 4;  // period 1.6 s = 32 bins
constexpr double kDeltaNs = 2e6;

std::int32_t uniform_type(std::mt19937_64& rng) {
  return std::uniform_int_distribution<std::int32_t>(1, 2)(rng);
}

// Poisson arrivals (~50 per bin), response time = 10 ms + exponential noise
// (mean 0.5 ms) + g * delta_l while the injected square wave is high at the
// request's arrival; binned with bin_latencies.
Synthetic synthesize(double g, std::uint64_t seed, bool inject = true) {
  std::mt19937_64 rng(seed);
  std::exponential_distribution<double> gap(50.0 / kBinNs);
  std::exponential_distribution<double> noise(1.0 / 5e5);
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  const double period_ns = static_cast<double>(kBins) * kBinNs / kKd;
  Synthetic out;
  out.phase_bins = uniform(rng) * period_ns / kBinNs;
  const double edge_ns = out.phase_bins * kBinNs;
  std::vector<LatencyRecord> records;
  const double end_ns = static_cast<double>(kBins) * kBinNs;
  for (double t = gap(rng); t < end_ns; t += gap(rng)) {
    const double in_period = std::fmod(t - edge_ns + 10 * period_ns, period_ns);
    const bool high = inject && in_period < period_ns / 2;
    const double latency = 1e7 + noise(rng) + (high ? g * kDeltaNs : 0.0);
    records.push_back({static_cast<std::int64_t>(t), static_cast<std::int64_t>(latency), 1});
  }
  out.series = bin_latencies(records, 0, kBinNs, kBins).mean_latency_ns;
  return out;
}

TEST(Gradient, RecoversKnownGradientWithinFivePercentAndInsideCi) {
  for (double g : {0.0, 0.5, 1.0, 3.0}) {
    const auto syn = synthesize(g, 1000 + static_cast<std::uint64_t>(g * 10));
    const auto baseline = synthesize(0.0, 77, /*inject=*/false);
    const double tolerance = 0.05 * std::max(g, 1.0);
    for (int mode = 0; mode < 3; ++mode) {
      GradientOptions options;
      std::optional<std::span<const double>> base;
      if (mode == 1) options.phase_bins = syn.phase_bins;
      if (mode == 2) base = baseline.series;
      const auto est = estimate_gradient(syn.series, base, kKd, kDeltaNs, options);
      SCOPED_TRACE(testing::Message()
                   << "g=" << g << " mode=" << mode << " value=" << est.value << " ci=["
                   << est.ci_low << "," << est.ci_high << "] snr=" << est.snr);
      EXPECT_NEAR(est.value, g, tolerance);
      EXPECT_LE(est.ci_low, g);
      EXPECT_GE(est.ci_high, g);
      EXPECT_NEAR(est.time_domain_value, g, 2 * tolerance);
      EXPECT_EQ(est.detected, g > 0);
      EXPECT_LT(est.ci_high - est.ci_low, 0.2);
      if (g > 0 && mode == 0) {
        // The estimated phase is the injected one (modulo the period).
        const double diff = std::remainder(est.phase_bins - syn.phase_bins, 32.0);
        EXPECT_LT(std::abs(diff), 0.2);
      }
    }
  }
}

// The CLI path: records of two types with different gradients, binned from
// the earliest record, k_d from the period, one type with a baseline.
TEST(Gradient, ByTypeFromRecords) {
  std::mt19937_64 rng(12);
  std::exponential_distribution<double> gap(100.0 / kBinNs);
  std::exponential_distribution<double> noise(1.0 / 5e5);
  const double period_ns = 1.6e9;
  const double edge_ns = 0.3e9;
  std::vector<LatencyRecord> records, baseline;
  const std::int64_t t0 = 1'700'000'000'000'000'000;  // epoch-like offset
  const double end_ns = static_cast<double>(kBins) * kBinNs;
  for (double t = gap(rng); t < end_ns; t += gap(rng)) {
    const std::int32_t type = uniform_type(rng);
    const bool high = std::fmod(t - edge_ns + period_ns, period_ns) < period_ns / 2;
    const double g = type == 1 ? 0.5 : 2.0;
    const double latency = 1e7 * type + noise(rng) + (high ? g * kDeltaNs : 0.0);
    records.push_back(
        {t0 + static_cast<std::int64_t>(t), static_cast<std::int64_t>(latency), type});
    baseline.push_back(
        {static_cast<std::int64_t>(t), static_cast<std::int64_t>(1e7 + noise(rng)), 1});
  }
  const auto results = gradients_by_type(records, baseline, kBinNs, kBins, 1'600'000'000, kDeltaNs);
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[0].type, 1);
  EXPECT_TRUE(results[0].has_baseline);
  EXPECT_NEAR(results[0].estimate.value, 0.5, 0.05);
  EXPECT_EQ(results[1].type, 2);
  EXPECT_FALSE(results[1].has_baseline);
  EXPECT_NEAR(results[1].estimate.value, 2.0, 0.1);
  for (const auto& r : results) {
    EXPECT_EQ(r.estimate.k_d, 4);
    EXPECT_EQ(r.estimate.bins, kBins);
    EXPECT_TRUE(r.reliable);
    EXPECT_LE(r.estimate.ci_low, r.type == 1 ? 0.5 : 2.0);
    EXPECT_GE(r.estimate.ci_high, r.type == 1 ? 0.5 : 2.0);
  }
  EXPECT_THROW(gradients_by_type({}, std::nullopt, kBinNs, kBins, 1'600'000'000, kDeltaNs),
               std::invalid_argument);
  EXPECT_THROW(gradients_by_type(records, std::nullopt, kBinNs, kBins, 1'500'000'000, kDeltaNs),
               std::invalid_argument);
}

// Coverage of the 95% interval across 200 seeded trials.
TEST(Gradient, CiCoverageAcrossSeeds) {
  struct Case {
    double g;
    bool phase_known;
  };
  for (const Case c : {Case{1.0, false}, Case{1.0, true}, Case{0.0, false}, Case{0.0, true}}) {
    int covered = 0;
    constexpr int kTrials = 200;
    for (int t = 0; t < kTrials; ++t) {
      const auto syn = synthesize(c.g, 5000 + static_cast<std::uint64_t>(t));
      GradientOptions options;
      if (c.phase_known) options.phase_bins = syn.phase_bins;
      const auto est = estimate_gradient(syn.series, std::nullopt, kKd, kDeltaNs, options);
      covered += (est.ci_low <= c.g && c.g <= est.ci_high) ? 1 : 0;
    }
    const double coverage = static_cast<double>(covered) / kTrials;
    EXPECT_GE(coverage, 0.90) << "g=" << c.g << " phase_known=" << c.phase_known;
    EXPECT_LE(coverage, 0.995) << "g=" << c.g << " phase_known=" << c.phase_known;
  }
}

}  // namespace
}  // namespace nabla::analysis
