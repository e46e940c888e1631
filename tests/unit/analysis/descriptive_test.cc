#include "nabla/analysis/descriptive.hh"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

namespace nabla::analysis {
namespace {

TEST(Descriptive, EmptyAndTooShortAreNaN) {
  std::vector<double> empty;
  EXPECT_TRUE(std::isnan(mean(empty)));
  EXPECT_TRUE(std::isnan(variance(empty)));
  std::vector<double> one{5.0};
  EXPECT_EQ(mean(one), 5.0);
  EXPECT_TRUE(std::isnan(variance(one)));  // ddof = 1 needs n >= 2
  EXPECT_EQ(variance(one, /*ddof=*/0), 0.0);
}

TEST(Descriptive, LiteralValues) {
  std::vector<double> x{2, 4, 4, 4, 5, 5, 7, 9};
  EXPECT_DOUBLE_EQ(mean(x), 5.0);
  EXPECT_DOUBLE_EQ(variance(x, 0), 4.0);
  EXPECT_DOUBLE_EQ(stddev(x, 0), 2.0);
  EXPECT_DOUBLE_EQ(variance(x), 32.0 / 7.0);
}

// Latencies sit on large offsets; mean(x^2) - mean^2 would lose every digit.
TEST(Descriptive, VarianceOnLargeOffsetIsExact) {
  std::vector<double> x{1e9 + 1, 1e9 + 2, 1e9 + 3, 1e9 + 4};
  EXPECT_EQ(mean(x), 1e9 + 2.5);
  EXPECT_EQ(variance(x), 5.0 / 3.0);
  RunningStats rs;
  for (double v : x) rs.add(v);
  EXPECT_EQ(rs.mean(), 1e9 + 2.5);
  EXPECT_DOUBLE_EQ(rs.variance(), 5.0 / 3.0);
  std::vector<double> y{1e12 + 0.5, 1e12 + 1.5};
  EXPECT_EQ(variance(y), 0.5);
}

TEST(Descriptive, RunningStatsMergeEqualsSinglePass) {
  std::mt19937_64 rng(42);
  std::lognormal_distribution<double> dist(13.0, 1.0);
  std::vector<double> all;
  RunningStats a, b, whole;
  for (int i = 0; i < 10000; ++i) {
    const double v = dist(rng);
    all.push_back(v);
    whole.add(v);
    (i % 3 == 0 ? a : b).add(v);
  }
  a.merge(b);
  EXPECT_EQ(a.count(), 10000);
  EXPECT_NEAR(a.mean(), mean(all), 1e-9 * mean(all));
  EXPECT_NEAR(a.variance(), variance(all), 1e-9 * variance(all));
  EXPECT_NEAR(whole.variance(), variance(all), 1e-9 * variance(all));
  EXPECT_EQ(a.min(), whole.min());
  EXPECT_EQ(a.max(), whole.max());
  RunningStats empty;
  a.merge(empty);
  EXPECT_EQ(a.count(), 10000);
  empty.merge(whole);
  EXPECT_EQ(empty.count(), 10000);
}

}  // namespace
}  // namespace nabla::analysis
