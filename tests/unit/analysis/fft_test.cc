#include "nabla/analysis/fft.hh"

#include <gtest/gtest.h>

#include <cmath>
#include <numbers>
#include <random>
#include <thread>
#include <vector>

namespace nabla::analysis {
namespace {

// Reference values from numpy.fft.rfft (numpy 1.24).
TEST(Fft, MatchesNumpyEvenLength) {
  const std::vector<double> x{1.0, 2.0, 0.5, -1.0, 3.0, 4.0, -2.0, 0.25};
  const std::vector<std::complex<double>> expected{
      {7.75, 0},    {-2.5303300858899105, -0.20190296114372064},
      {5.5, -6.75}, {-1.4696699141100893, 4.7980970388562794},
      {-2.75, 0},
  };
  const auto got = rfft(x);
  ASSERT_EQ(got.size(), expected.size());
  for (std::size_t k = 0; k < got.size(); ++k) {
    EXPECT_NEAR(got[k].real(), expected[k].real(), 1e-12) << k;
    EXPECT_NEAR(got[k].imag(), expected[k].imag(), 1e-12) << k;
  }
}

TEST(Fft, MatchesNumpyOddLength) {
  const std::vector<double> x{1.0, 2.0, 0.5, -1.0, 3.0};
  const std::vector<std::complex<double>> expected{{5.5, 0},
                                                   {2.949593469062211, 0.069378637856443826},
                                                   {-3.199593469062211, 2.0143700267352034}};
  const auto got = rfft(x);
  ASSERT_EQ(got.size(), 3u);
  for (std::size_t k = 0; k < got.size(); ++k) {
    EXPECT_NEAR(got[k].real(), expected[k].real(), 1e-12) << k;
    EXPECT_NEAR(got[k].imag(), expected[k].imag(), 1e-12) << k;
  }
  const auto mag = magnitude_spectrum(x);
  ASSERT_EQ(mag.size(), 3u);
  EXPECT_NEAR(mag[0], 5.5, 1e-12);
  EXPECT_NEAR(mag[1], 2.9504092984067927, 1e-12);
  EXPECT_NEAR(mag[2], 3.7808841521362084, 1e-12);
}

TEST(Fft, EdgeCases) {
  EXPECT_TRUE(rfft(std::vector<double>{}).empty());
  const auto one = rfft(std::vector<double>{4.5});
  ASSERT_EQ(one.size(), 1u);
  EXPECT_DOUBLE_EQ(one[0].real(), 4.5);
  EXPECT_DOUBLE_EQ(one[0].imag(), 0.0);
}

// A pure cosine of integer frequency k0 has |X_k0| = N/2 (unnormalised
// convention of the paper's equation 2) and nothing elsewhere.
TEST(Fft, CosineLandsInItsBin) {
  constexpr std::size_t kN = 128;
  constexpr std::size_t kK0 = 5;
  std::vector<double> x(kN);
  for (std::size_t i = 0; i < kN; ++i) {
    x[i] = 3.0 * std::cos(2.0 * std::numbers::pi * static_cast<double>(kK0 * i) / kN);
  }
  const auto mag = magnitude_spectrum(x);
  ASSERT_EQ(mag.size(), kN / 2 + 1);
  for (std::size_t k = 0; k < mag.size(); ++k) {
    EXPECT_NEAR(mag[k], k == kK0 ? 3.0 * kN / 2 : 0.0, 1e-9) << k;
  }
}

// Concurrent callers with several sizes get the same answers as a single
// thread (the planner is serialised, execution runs in parallel).
TEST(Fft, ConcurrentCallersAgree) {
  std::mt19937_64 rng(42);
  std::normal_distribution<double> noise(0.0, 1.0);
  const std::vector<std::size_t> sizes{64, 96, 128, 250, 256, 1000};
  std::vector<std::vector<double>> inputs;
  std::vector<std::vector<std::complex<double>>> expected;
  for (std::size_t n : sizes) {
    std::vector<double> x(n);
    for (double& v : x) v = noise(rng);
    expected.push_back(rfft(x));
    inputs.push_back(std::move(x));
  }
  std::vector<int> mismatches(4, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int rep = 0; rep < 50; ++rep) {
        for (std::size_t s = 0; s < sizes.size(); ++s) {
          if (rfft(inputs[s]) != expected[s]) ++mismatches[t];
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int m : mismatches) EXPECT_EQ(m, 0);
  EXPECT_GE(fft_cached_plan_count(), sizes.size());
}

}  // namespace
}  // namespace nabla::analysis
