#include "nabla/analysis/percentile.hh"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <stdexcept>
#include <vector>

namespace nabla::analysis {
namespace {

std::vector<double> one_to_hundred_shuffled() {
  std::vector<double> v(100);
  std::iota(v.begin(), v.end(), 1.0);
  std::mt19937_64 rng(3);
  std::shuffle(v.begin(), v.end(), rng);
  return v;
}

// The worked example of the lancet paper, section 2.3.
TEST(PercentileCi, LancetWorkedExample) {
  const auto r = percentile_ci_ranks(10000, 0.99, 0.95);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->j, 9880u);
  EXPECT_EQ(r->k, 9921u);
}

// Literal ranks computed with scipy.stats.norm.ppf and the formulas.
TEST(PercentileCi, LiteralRanks) {
  auto r = percentile_ci_ranks(100, 0.5, 0.95);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->j, 40u);
  EXPECT_EQ(r->k, 61u);
  r = percentile_ci_ranks(100, 0.9, 0.95);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->j, 84u);
  EXPECT_EQ(r->k, 97u);
  r = percentile_ci_ranks(100, 0.5, 0.90);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->j, 41u);
  EXPECT_EQ(r->k, 60u);
  r = percentile_ci_ranks(20, 0.5, 0.99);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->j, 4u);
  EXPECT_EQ(r->k, 17u);
}

// k = 102 > 100 and k = 1002 > 1000: no interval rather than a clamped one.
TEST(PercentileCi, NoIntervalWhenRanksFallOutside) {
  EXPECT_FALSE(percentile_ci_ranks(100, 0.99, 0.95).has_value());
  EXPECT_FALSE(percentile_ci_ranks(1000, 0.999, 0.95).has_value());
  EXPECT_FALSE(percentile_ci_ranks(1, 0.5, 0.95).has_value());
  const auto est = percentile(one_to_hundred_shuffled(), 0.99);
  EXPECT_DOUBLE_EQ(est.value, 99.0);
  EXPECT_FALSE(est.ci.has_value());
}

TEST(Percentile, ValuesAndIntervalOnKnownData) {
  const auto v = one_to_hundred_shuffled();
  const auto est = percentile(v, 0.5, 0.95);
  EXPECT_DOUBLE_EQ(est.value, 50.0);
  ASSERT_TRUE(est.ci);
  EXPECT_DOUBLE_EQ(est.ci->low, 40.0);
  EXPECT_DOUBLE_EQ(est.ci->high, 61.0);
  EXPECT_DOUBLE_EQ(percentile(v, 0.07).value, 7.0);  // 100 * 0.07 is not 7.000000000000001
  EXPECT_DOUBLE_EQ(percentile(v, 0.0).value, 1.0);
  EXPECT_DOUBLE_EQ(percentile(v, 1.0).value, 100.0);
  EXPECT_DOUBLE_EQ(percentile(v, 0.995).value, 100.0);

  const std::vector<double> ps{0.5, 0.9, 0.99};
  const auto many = percentiles(v, ps, 0.95);
  ASSERT_EQ(many.size(), 3u);
  EXPECT_DOUBLE_EQ(many[1].value, 90.0);
  ASSERT_TRUE(many[1].ci);
  EXPECT_DOUBLE_EQ(many[1].ci->low, 84.0);
  EXPECT_DOUBLE_EQ(many[1].ci->high, 97.0);
  EXPECT_FALSE(many[2].ci);
}

TEST(Percentile, EdgeCasesAndErrors) {
  const std::vector<double> one{42.0};
  EXPECT_DOUBLE_EQ(percentile(one, 0.5).value, 42.0);
  EXPECT_FALSE(percentile(one, 0.5).ci);
  EXPECT_THROW(percentile(std::vector<double>{}, 0.5), std::invalid_argument);
  EXPECT_THROW(percentile(one, 1.5), std::invalid_argument);
  EXPECT_THROW(percentile(one, -0.1), std::invalid_argument);
  EXPECT_THROW(percentile(one, 0.5, 1.0), std::invalid_argument);
  EXPECT_THROW(percentile(one, 0.5, 0.0), std::invalid_argument);
  const std::vector<double> with_nan{1.0, std::nan(""), 3.0};
  EXPECT_THROW(percentile(with_nan, 0.5), std::invalid_argument);
  const std::vector<double> ps{0.5};
  EXPECT_THROW(percentiles(with_nan, ps), std::invalid_argument);
}

// Selection and full sort agree on random data with ties.
TEST(Percentile, SelectionMatchesSort) {
  std::mt19937_64 rng(11);
  std::uniform_int_distribution<int> d(0, 50);
  std::vector<double> v(5000);
  for (double& x : v) x = d(rng);
  std::vector<double> sorted = v;
  std::sort(sorted.begin(), sorted.end());
  for (double p : {0.01, 0.25, 0.5, 0.9, 0.99, 0.999}) {
    const auto a = percentile(v, p, 0.95);
    EXPECT_EQ(a.value, percentile_sorted(sorted, p));
    const auto b = percentile_ci_sorted(sorted, p, 0.95);
    ASSERT_EQ(a.ci.has_value(), b.has_value());
    if (b) {
      EXPECT_EQ(a.ci->low, b->low);
      EXPECT_EQ(a.ci->high, b->high);
    }
  }
}

// Coverage: the 95% interval of the median of 1000 exponential samples holds
// the true median ln(2)/lambda in 93-97% of 1000 seeded trials. (The exact
// coverage of these ranks is P(469 <= Binom(1000, .5) <= 531) = 0.9537, by
// scipy.stats.binom; the lancet ranks are slightly conservative.)
TEST(PercentileCi, CoversTrueQuantileOfExponential) {
  constexpr double kLambda = 1.0 / 250.0;
  for (double p : {0.5, 0.9}) {
    const double truth = -std::log(1.0 - p) / kLambda;
    std::mt19937_64 rng(20240601);
    std::exponential_distribution<double> expo(kLambda);
    int covered = 0;
    constexpr int kTrials = 1000;
    std::vector<double> v(1000);
    for (int t = 0; t < kTrials; ++t) {
      for (double& x : v) x = expo(rng);
      const auto est = percentile(v, p, 0.95);
      ASSERT_TRUE(est.ci);
      covered += (est.ci->low <= truth && truth <= est.ci->high) ? 1 : 0;
    }
    const double coverage = static_cast<double>(covered) / kTrials;
    EXPECT_GE(coverage, 0.93) << "p=" << p;
    EXPECT_LE(coverage, 0.97) << "p=" << p;  // exact: 0.9537 (p=.5), 0.9604 (p=.9)
  }
}

}  // namespace
}  // namespace nabla::analysis
