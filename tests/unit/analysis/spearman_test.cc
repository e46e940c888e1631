#include "nabla/analysis/spearman.hh"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <stdexcept>
#include <vector>

#include "stats_test_series.hh"

namespace nabla::analysis {
namespace {

using testing::ar1_half;
using testing::ma1;
using testing::uniform_ints;
using testing::white_noise;

// Expected values: scipy 1.10 scipy.stats.spearmanr(a, b), printed by
// bench/analysis/test_vectors.py.
constexpr double kRel = 1e-9;

void expect_rel(double actual, double expected) {
  EXPECT_NEAR(actual, expected, kRel * std::fabs(expected)) << "expected " << expected;
}

TEST(Spearman, TwoSeriesWithTies) {
  const std::vector<double> a = {3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8};
  const std::vector<double> b = {2, 7, 1, 8, 2, 8, 1, 8, 2, 8, 4, 5};
  const auto r = spearman(a, b);
  expect_rel(r.rho, 0.1415796863640157);
  expect_rel(r.p_value, 0.6607268292868229);
  EXPECT_EQ(r.n, 12);
}

TEST(Spearman, AutocorrelationOfAr1DecaysWithLag) {
  const auto y = ar1_half(6, 300);
  const std::vector<std::array<double, 3>> cases = {
      {1, 0.41571816569773967, 6.355962941972803e-14},
      {2, 0.23295217896910336, 4.89722670281262e-05},
      {3, 0.19715337668357802, 0.0006332698070774548},
      {4, 0.0558280931162287, 0.3384736486549519},
      {8, 0.07704413049775563, 0.18923827180116298},
  };
  for (const auto& [lag, rho, p] : cases) {
    SCOPED_TRACE(lag);
    const auto r = spearman_autocorrelation(y, static_cast<std::size_t>(lag));
    expect_rel(r.rho, rho);
    expect_rel(r.p_value, p);
    EXPECT_EQ(r.n, 300 - static_cast<std::int64_t>(lag));
  }
}

TEST(Spearman, WhiteNoiseAndManyTies) {
  const auto w = spearman_autocorrelation(white_noise(8, 100), 1);
  expect_rel(w.rho, -0.05488677862565009);
  expect_rel(w.p_value, 0.5894813574781939);
  const auto t = spearman_autocorrelation(uniform_ints(9, 60, 5), 1);  // values 0..4 only
  expect_rel(t.rho, 0.2711214404692789);
  expect_rel(t.p_value, 0.037797577392173175);
}

TEST(Spearman, MonotoneAndConstantSeries) {
  std::vector<double> up(50);
  for (std::size_t i = 0; i < up.size(); ++i) up[i] = std::exp(0.1 * static_cast<double>(i));
  const auto r = spearman_autocorrelation(up, 3);
  EXPECT_EQ(r.rho, 1.0);
  EXPECT_EQ(r.p_value, 0.0);
  // A constant side has no ranks to correlate: NaN, as scipy.
  const auto c = spearman_autocorrelation(std::vector<double>(20, 4.0), 1);
  EXPECT_TRUE(std::isnan(c.rho));
  EXPECT_TRUE(std::isnan(c.p_value));
}

TEST(Spearman, RejectsInvalidInput) {
  EXPECT_THROW(spearman(std::vector<double>{1, 2, 3}, std::vector<double>{1, 2}),
               std::invalid_argument);
  EXPECT_THROW(spearman(std::vector<double>{1, 2}, std::vector<double>{2, 1}),
               std::invalid_argument);  // fewer than 3 pairs
  EXPECT_THROW(spearman_autocorrelation(std::vector<double>{1, 2, 3}, 1), std::invalid_argument);
  EXPECT_THROW(spearman_autocorrelation(std::vector<double>{1, 2, 3, 4, 5}, 0),
               std::invalid_argument);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_THROW(spearman_autocorrelation(std::vector<double>{1, nan, 3, 4, 5}, 1),
               std::invalid_argument);
}

TEST(SpearmanLagScan, StopsAtFirstNonSignificantLag) {
  // Same AR(1) as above: lags 1 and 2 are significant, lag 4 is not.
  const auto scan = first_independent_lag(ar1_half(6, 300), 0.05, 64);
  ASSERT_TRUE(scan.independent_lag.has_value());
  EXPECT_EQ(*scan.independent_lag, 4u);
  ASSERT_EQ(scan.steps.size(), 3u);
  EXPECT_EQ(scan.steps[0].lag, 1u);
  EXPECT_EQ(scan.steps[1].lag, 2u);
  expect_rel(scan.steps[1].result.p_value, 4.89722670281262e-05);
  expect_rel(scan.steps[2].result.rho, 0.0558280931162287);

  // MA(1): correlated at lag 1 only.
  const auto ma = first_independent_lag(ma1(10, 400), 0.05, 64);
  EXPECT_EQ(ma.independent_lag, std::optional<std::size_t>(2));
  expect_rel(ma.steps[0].result.rho, 0.48471088058910433);
  expect_rel(ma.steps[1].result.p_value, 0.5769700295181008);
}

TEST(SpearmanLagScan, GivesUpAtMaxLag) {
  std::vector<double> up(40);
  for (std::size_t i = 0; i < up.size(); ++i) up[i] = static_cast<double>(i % 20);  // sawtooth
  const auto scan = first_independent_lag(up, 0.05, 4);
  EXPECT_FALSE(scan.independent_lag.has_value());
  ASSERT_EQ(scan.steps.size(), 3u);  // lags 1, 2, 4
  EXPECT_EQ(scan.steps.back().lag, 4u);
  EXPECT_THROW(first_independent_lag(up, 0.0, 4), std::invalid_argument);
  EXPECT_THROW(first_independent_lag(up, 1.0, 4), std::invalid_argument);
  EXPECT_THROW(first_independent_lag(up, 0.05, 0), std::invalid_argument);
}

}  // namespace
}  // namespace nabla::analysis
