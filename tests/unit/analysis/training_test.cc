#include "nabla/analysis/training.hh"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <numbers>
#include <random>
#include <stdexcept>
#include <vector>

#include "nabla/analysis/gradient.hh"
#include "nabla/analysis/square_wave_synth.hh"

namespace nabla::analysis {
namespace {

// Literal values from numpy: rfft of the two chunks, mean and ddof=1 std of
// the real and imaginary parts; amplitude = 30*|sigma_k| / (k*cot(pi/2n)).
TEST(Training, LiteralSmallExample) {
  const std::vector<double> x{3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 9, 3};
  TrainingOptions o;
  o.bins = 8;
  o.chunks = 2;
  o.min_bins_per_period = 4;
  const auto r = train(x, 50'000'000, o);
  ASSERT_EQ(r.fft0_mean.size(), 5u);
  EXPECT_NEAR(r.fft0_mean[0].real(), 40.0, 1e-12);
  EXPECT_NEAR(r.fft0_mean[1].real(), -7.242640687119286, 1e-12);
  EXPECT_NEAR(r.fft0_mean[1].imag(), 5.242640687119285, 1e-12);
  EXPECT_NEAR(r.fft0_std[1].real(), 4.414213562373095, 1e-12);
  EXPECT_NEAR(r.fft0_std[1].imag(), 2.7573593128807143, 1e-12);
  EXPECT_NEAR(r.fft0_sigma[1], 5.204643287927481, 1e-12);
  EXPECT_NEAR(r.fft0_sigma[3], 11.353928317786378, 1e-12);
  EXPECT_NEAR(r.amplitude_by_k_ns[1], 64.6750151152098, 1e-9);
  EXPECT_NEAR(r.amplitude_by_k_ns[2], 47.434164902525694, 1e-9);
  EXPECT_EQ(r.amplitude_by_k_ns[3], 0.0);  // 8/3 < 4 bins per period
  EXPECT_EQ(r.k_d, 2);
  EXPECT_NEAR(r.amplitude_ns, 47.434164902525694, 1e-9);
  EXPECT_NEAR(r.spectral_amplitude_ns, 30 * 3.1622776601683795, 1e-9);
  EXPECT_DOUBLE_EQ(r.period_bins, 4.0);
  EXPECT_DOUBLE_EQ(r.period_ns, 200'000'000.0);
  EXPECT_DOUBLE_EQ(r.frequency_hz, 5.0);
}

TEST(Training, RejectsBadInput) {
  const std::vector<double> x(128 * 9, 1.0);
  TrainingOptions o;
  EXPECT_NO_THROW(train(x, 1000, o));
  EXPECT_THROW(train(std::span(x).first(128 * 9 - 1), 1000, o), std::invalid_argument);
  EXPECT_THROW(train(x, 0, o), std::invalid_argument);
  auto bad = o;
  bad.bins = 100;
  EXPECT_THROW(train(x, 1000, bad), std::invalid_argument);
  bad = o;
  bad.chunks = 1;
  EXPECT_THROW(train(x, 1000, bad), std::invalid_argument);
  bad = o;
  bad.delay_scale = 0;
  EXPECT_THROW(train(x, 1000, bad), std::invalid_argument);
  bad = o;
  bad.min_bins_per_period = 2;
  EXPECT_THROW(train(x, 1000, bad), std::invalid_argument);
}

// Low-frequency (AR(1), phi = 0.98) noise makes slow injections expensive:
// training picks a frequency near the fastest allowed (8 bins per period; the
// spectrum is nearly flat over k = 12..16, so the exact pick is noise).
TEST(Training, AvoidsNoisyLowFrequencies) {
  std::mt19937_64 rng(17);
  std::normal_distribution<double> noise(0.0, 1e5);
  std::vector<double> x(128 * 9);
  double ar = 0;
  for (double& v : x) {
    ar = 0.98 * ar + noise(rng);
    v = 1e7 + ar;
  }
  const auto r = train(x, 50'000'000);
  EXPECT_GE(r.k_d, 12);
  EXPECT_LE(r.k_d, 16);
  EXPECT_GT(r.amplitude_by_k_ns[1], 5 * r.amplitude_ns);  // PSD ratio ~200 at phi=.98
}

// A strong oscillation of random amplitude and phase at bin 3 makes k = 3
// the worst choice in an otherwise white spectrum.
TEST(Training, AvoidsAnInterferingOscillation) {
  std::mt19937_64 rng(23);
  std::normal_distribution<double> noise(0.0, 1e5);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::vector<double> x(128 * 9);
  for (std::size_t c = 0; c < 9; ++c) {
    const double amp = 5e5 * u(rng), phase = 2 * std::numbers::pi * u(rng);
    for (std::size_t i = 0; i < 128; ++i) {
      x[c * 128 + i] =
          1e7 + noise(rng) +
          amp * std::cos(2 * std::numbers::pi * 3.0 * static_cast<double>(i) / 128 + phase);
    }
  }
  TrainingOptions o;
  o.min_bins_per_period = 4;
  const auto r = train(x, 50'000'000, o);
  EXPECT_NE(r.k_d, 3);
  for (std::size_t k = 1; k <= 32; ++k) {
    if (k != 3) {
      EXPECT_GT(r.amplitude_by_k_ns[3], r.amplitude_by_k_ns[k]) << k;
    }
  }
}

// Units: a unit-gradient wave of the trained amplitude moves the coefficient
// at f_d by at least d * sigma(f_d) whatever its phase (equality at the worst
// phase, half a bin off).
TEST(Training, TrainedAmplitudeReachesDSigmaAtAnyPhase) {
  std::mt19937_64 rng(29);
  std::normal_distribution<double> noise(0.0, 2e5);
  std::vector<double> x(128 * 9);
  for (double& v : x) v = 1e7 + noise(rng);
  const auto r = train(x, 50'000'000);
  const auto k = static_cast<std::size_t>(r.k_d);
  double smallest = std::numeric_limits<double>::infinity();
  for (double theta = 0; theta < r.period_bins; theta += 0.05) {
    const double moved =
        r.amplitude_ns * std::abs(square_wave_coefficient(128, k, r.period_bins, theta));
    EXPECT_GE(moved, r.spectral_amplitude_ns * (1 - 1e-9)) << theta;
    smallest = std::min(smallest, moved);
  }
  EXPECT_NEAR(smallest, 30 * r.fft0_sigma[k], 1e-6 * smallest);
}

// End to end: inject the trained amplitude (gradient 1) at the trained
// frequency with an arbitrary phase into fresh noise and measure against the
// training mean as FFT^0. The realised SNR is below d: sigma at the chosen
// k_d is the minimum of noisy estimates (M = 9), biased low (training.hh).
TEST(Training, TrainedInjectionIsMeasurable) {
  std::mt19937_64 rng(31);
  std::normal_distribution<double> noise(0.0, 2e5);
  std::vector<double> x(128 * 10);
  for (double& v : x) v = 1e7 + noise(rng);
  const auto r = train(std::span(x).first(128 * 9), 50'000'000);
  auto wave = square_wave_bin_means(128, r.period_bins, 0.37 * r.period_bins, r.amplitude_ns);
  std::vector<double> measured(x.end() - 128, x.end());
  for (std::size_t i = 0; i < 128; ++i) measured[i] += wave[i];
  const auto est =
      estimate_gradient_with_baseline_spectrum(measured, r.fft0_mean, r.k_d, r.amplitude_ns);
  EXPECT_NEAR(est.value, 1.0, 4 * est.standard_error);
  EXPECT_LT(est.standard_error, 0.1);
  EXPECT_GT(est.snr, 30.0 / 4);
  EXPECT_TRUE(est.detected);
  EXPECT_LE(est.ci_low, 1.0);
  EXPECT_GE(est.ci_high, 1.0);
}

TEST(Training, AdaptAmplitude) {
  EXPECT_DOUBLE_EQ(adapt_amplitude_ns(1e6, 2.0, 1e7), 5e5);
  EXPECT_DOUBLE_EQ(adapt_amplitude_ns(1e6, 0.05, 1e7), 1e7);
  EXPECT_DOUBLE_EQ(adapt_amplitude_ns(1e6, 0.0, 1e7), 1e7);
  EXPECT_DOUBLE_EQ(adapt_amplitude_ns(1e6, std::numeric_limits<double>::quiet_NaN(), 1e7), 1e7);
}

}  // namespace
}  // namespace nabla::analysis
