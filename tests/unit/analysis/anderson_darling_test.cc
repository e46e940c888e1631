#include "nabla/analysis/anderson_darling.hh"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <stdexcept>
#include <vector>

#include "stats_test_series.hh"

namespace nabla::analysis {
namespace {

using testing::geometric_gaps;
using testing::uniform_ints;

// Expected values: scipy 1.10 scipy.stats.anderson(x, dist='expon'), printed
// by bench/analysis/test_vectors.py.
constexpr double kRel = 1e-9;

void expect_rel(double actual, double expected) {
  EXPECT_NEAR(actual, expected, kRel * std::fabs(expected)) << "expected " << expected;
}

void expect_critical(const AndersonDarlingResult& r, std::array<double, 5> expected) {
  for (std::size_t i = 0; i < 5; ++i) EXPECT_DOUBLE_EQ(r.critical_values[i], expected[i]) << i;
  const std::array<double, 5> levels = {15.0, 10.0, 5.0, 2.5, 1.0};
  EXPECT_EQ(r.significance_levels, levels);
}

TEST(AndersonDarling, DiscreteExponentialWithTiesIsAccepted) {
  const auto r = anderson_darling_exponential(geometric_gaps(7, 200, 50));
  expect_rel(r.statistic, 0.35870644755416947);
  expect_critical(r, {0.919, 1.075, 1.337, 1.601, 1.951});
  EXPECT_FALSE(r.rejects_at(15.0));
  EXPECT_FALSE(r.rejects_at(1.0));
}

TEST(AndersonDarling, CoarseGeometricSampleRejectedOnlyAtLooseLevels) {
  const auto r = anderson_darling_exponential(geometric_gaps(3, 40, 20));
  expect_rel(r.statistic, 1.0947431345026644);
  expect_critical(r, {0.908, 1.062, 1.321, 1.582, 1.928});
  EXPECT_TRUE(r.rejects_at(15.0));
  EXPECT_TRUE(r.rejects_at(10.0));
  EXPECT_FALSE(r.rejects_at(5.0));
}

TEST(AndersonDarling, UniformSampleIsRejected) {
  std::vector<double> x = uniform_ints(11, 150, 1000);
  for (double& v : x) v += 1.0;
  const auto r = anderson_darling_exponential(x);
  expect_rel(r.statistic, 9.095361769550664);
  expect_critical(r, {0.918, 1.074, 1.336, 1.6, 1.949});
  EXPECT_TRUE(r.rejects_at(1.0));
}

TEST(AndersonDarling, SmallestSampleAndLargeSampleCriticalValues) {
  const std::vector<double> five = {0.5, 1.25, 2.0, 0.125, 3.5};
  const auto r = anderson_darling_exponential(five);
  expect_rel(r.statistic, 0.16548953428478708);
  expect_critical(r, {0.823, 0.962, 1.197, 1.434, 1.747});

  const auto big = anderson_darling_exponential(geometric_gaps(5, 1000, 10));
  expect_rel(big.statistic, 8.993958931273028);
  expect_critical(big, {0.921, 1.077, 1.34, 1.605, 1.956});
}

TEST(AndersonDarling, ScaleInvariant) {
  std::vector<double> x = geometric_gaps(7, 200, 50);
  for (double& v : x) v *= 1e6;  // gaps in ns instead of ms: same test
  expect_rel(anderson_darling_exponential(x).statistic, 0.35870644755416947);
}

TEST(AndersonDarling, ZeroValueGivesInfiniteStatisticLikeScipy) {
  const std::vector<double> x = {0.0, 1.0, 2.0, 0.5, 3.0, 1.5};
  const auto r = anderson_darling_exponential(x);
  EXPECT_TRUE(std::isinf(r.statistic) && r.statistic > 0);
  EXPECT_TRUE(r.rejects_at(1.0));
}

TEST(AndersonDarling, RejectsInvalidInput) {
  EXPECT_THROW(anderson_darling_exponential(std::vector<double>{1, 2, 3, 4}),
               std::invalid_argument);  // below the minimum of 5
  EXPECT_THROW(anderson_darling_exponential(std::vector<double>{}), std::invalid_argument);
  EXPECT_THROW(anderson_darling_exponential(std::vector<double>{1, 2, -0.5, 4, 5}),
               std::invalid_argument);  // outside the exponential's support
  EXPECT_THROW(anderson_darling_exponential(std::vector<double>{0, 0, 0, 0, 0}),
               std::invalid_argument);  // no scale
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_THROW(anderson_darling_exponential(std::vector<double>{1, 2, nan, 4, 5}),
               std::invalid_argument);
  EXPECT_THROW(anderson_darling_exponential(std::vector<double>{1, 2, inf, 4, 5}),
               std::invalid_argument);
  try {
    anderson_darling_exponential(std::vector<double>{1, 2});
    FAIL() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("at least 5"), std::string::npos) << e.what();
  }
}

TEST(AndersonDarling, RejectsAtUnknownLevelThrows) {
  const auto r = anderson_darling_exponential(geometric_gaps(7, 200, 50));
  EXPECT_THROW((void)r.rejects_at(0.05), std::invalid_argument);  // a fraction, not percent
  EXPECT_THROW((void)r.rejects_at(20.0), std::invalid_argument);
}

}  // namespace
}  // namespace nabla::analysis
