#include "nabla/analysis/adf.hh"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "nabla/analysis/mackinnon.hh"
#include "stats_test_series.hh"

namespace nabla::analysis {
namespace {

using testing::ar1_half;
using testing::ma1;
using testing::random_walk;
using testing::white_noise;

// Expected values: statsmodels 0.13.5 adfuller(x) (regression='c',
// autolag='AIC'), mackinnonp and mackinnoncrit, printed by
// bench/analysis/test_vectors.py.
constexpr double kRel = 1e-9;

void expect_rel(double actual, double expected, double rel = kRel) {
  EXPECT_NEAR(actual, expected, rel * std::fabs(expected)) << "expected " << expected;
}

struct Expected {
  double statistic;
  double p_value;
  int used_lag;
  std::int64_t nobs;
  std::array<double, 3> critical;
  double icbest;
};

void expect_adf(const AdfResult& r, const Expected& e) {
  expect_rel(r.statistic, e.statistic);
  expect_rel(r.p_value, e.p_value);
  EXPECT_EQ(r.used_lag, e.used_lag);
  EXPECT_EQ(r.nobs, e.nobs);
  for (std::size_t i = 0; i < 3; ++i) expect_rel(r.critical_values[i], e.critical[i], 1e-13);
  expect_rel(r.icbest, e.icbest);
}

TEST(Adf, WhiteNoiseRejectsUnitRoot) {
  const auto r = adf_test(white_noise(1, 200));
  EXPECT_EQ(r.max_lag, 15);  // ceil(12 * 2^0.25) = ceil(14.27)
  expect_adf(r, {-3.5945355224075937,
                 0.005866360294459837,
                 6,
                 193,
                 {-3.4646940755442612, -2.8766348847254934, -2.5748163958763994},
                 2605.714379292352});
  EXPECT_TRUE(r.stationary_at(0.01));
}

TEST(Adf, LongWhiteNoiseBeyondTheTableGivesZero) {
  const auto r = adf_test(white_noise(12, 1000));
  expect_adf(r, {-30.825095085533455,
                 0.0,
                 0,
                 999,
                 {-3.4369127451400474, -2.864437475834273, -2.568312754566378},
                 13838.808365030154});
  EXPECT_EQ(r.p_value, 0.0);
}

TEST(Adf, RandomWalkDoesNotReject) {
  const auto r = adf_test(random_walk(2, 200));
  expect_adf(r, {-1.8840135200693693,
                 0.339618621523451,
                 2,
                 197,
                 {-3.463987334463603, -2.8763259091636213, -2.5746515171738515},
                 2588.5427619940992});
  EXPECT_FALSE(r.stationary_at(0.10));
}

TEST(Adf, Ar1DeepInTheSmallPTail) {
  expect_adf(adf_test(ar1_half(3, 500)),
             {-13.447342125534744,
              3.7424374041649965e-25,
              0,
              499,
              {-3.4435228622952065, -2.867349510566146, -2.569864247011056},
              6843.117610130185});
}

TEST(Adf, MovingAverageNeedsSeveralLags) {
  // An MA(1) has an infinite AR representation: AIC picks an interior lag,
  // and the refit uses more rows than the common-sample search.
  expect_adf(adf_test(ma1(4, 300)), {-6.788803174184874,
                                     2.393859276456951e-09,
                                     5,
                                     294,
                                     {-3.452789844280995, -2.871421512222641, -2.5720351510944512},
                                     4018.2372964985693});
  const auto capped = adf_test(ma1(4, 300), 3);
  EXPECT_EQ(capped.max_lag, 3);
  expect_adf(capped, {-7.6947231300029255,
                      1.389076487518578e-11,
                      3,
                      296,
                      {-3.452636878592149, -2.8713543954331433, -2.5719993576515705},
                      4203.5278663405425});
}

TEST(Adf, DeepLagSearchOnALongSeries) {
  // 20000 values: 47 candidate models on a common sample, AIC picks lag 19.
  const auto r = adf_test(ma1(13, 20000));
  EXPECT_EQ(r.max_lag, 46);
  expect_adf(r, {-31.351460323588327,
                 0.0,
                 19,
                 19980,
                 {-3.4306773343513073, -2.861684670270882, -2.566847004033563},
                 282800.54705511115});
}

TEST(Adf, ShortSeries) {
  expect_adf(adf_test(white_noise(5, 20)),
             {-4.24744185131983,
              0.0005471054269773594,
              8,
              11,
              {-4.223238279489106, -3.189368925619835, -2.729839421487603},
              125.27707208919567});
  expect_adf(adf_test(std::vector<double>{1.0, 3.0, 2.0, 5.0}),
             {-1.039230484541326,
              0.7386884227973187,
              0,
              3,
              {-10.41719074074074, -5.77838074074074, -3.391681111111111},
              13.499143400144145});
}

TEST(Adf, LargeOffsetChangesNothing) {
  // Latencies sit on large offsets; the level is centred before the products
  // are formed, so the statistic is that of the offset-free series.
  std::vector<double> x = ma1(4, 300);
  for (double& v : x) v += 1e9;
  const auto r = adf_test(x);
  EXPECT_EQ(r.used_lag, 5);
  expect_rel(r.statistic, -6.788803174184874, 1e-8);
}

TEST(Adf, DefaultMaxLagFollowsStatsmodels) {
  EXPECT_EQ(adf_default_max_lag(4), 0);   // capped by n/2 - 2
  EXPECT_EQ(adf_default_max_lag(20), 8);  // ceil(12 * 0.2^0.25) = 9, cap 8
  EXPECT_EQ(adf_default_max_lag(100), 12);
  EXPECT_EQ(adf_default_max_lag(100000), 68);
  EXPECT_EQ(adf_default_max_lag(1000000), 120);
}

TEST(Adf, RejectsInvalidInput) {
  const std::vector<double> constant(50, 7.0);
  EXPECT_THROW(adf_test(constant), std::invalid_argument);
  std::vector<double> line(50);
  for (std::size_t i = 0; i < line.size(); ++i) line[i] = 3.0 * static_cast<double>(i);
  EXPECT_THROW(adf_test(line), std::invalid_argument);  // constant differences
  try {
    adf_test(std::vector<double>{1.0, 2.0, 4.0});
    FAIL() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("at least 4"), std::string::npos) << e.what();
  }
  std::vector<double> x = white_noise(1, 100);
  EXPECT_THROW(adf_test(x, 49), std::invalid_argument);  // above n/2 - 2
  EXPECT_THROW(adf_test(x, -1), std::invalid_argument);
  x[10] = std::numeric_limits<double>::quiet_NaN();
  EXPECT_THROW(adf_test(x), std::invalid_argument);
}

TEST(MacKinnon, PValueAcrossBothPolynomialsAndCutoffs) {
  const std::vector<std::pair<double, double>> cases = {
      {-18.8, 2.0229167170824544e-30}, {-10.0, 1.8953190533444514e-17},
      {-4.0, 0.0014105112530392603},   {-2.5, 0.11547432475870761},
      {-1.61, 0.4779756525941893},     {-1.6, 0.4835934696535866},
      {-0.5, 0.8920164965835715},      {0.0, 0.958532086060056},
      {1.5, 0.99752427540539},         {2.7, 0.9990870192563208},
  };
  for (const auto& [tau, p] : cases) {
    SCOPED_TRACE(tau);
    expect_rel(mackinnon_p_value(tau), p, 1e-12);
  }
  EXPECT_EQ(mackinnon_p_value(-25.0), 0.0);
  EXPECT_EQ(mackinnon_p_value(3.0), 1.0);
  EXPECT_TRUE(std::isnan(mackinnon_p_value(std::numeric_limits<double>::quiet_NaN())));
}

TEST(MacKinnon, CriticalValues) {
  const auto c10 = mackinnon_critical_values(10);
  expect_rel(c10[0], -4.331573, 1e-14);
  expect_rel(c10[1], -3.23295, 1e-14);
  expect_rel(c10[2], -2.7487, 1e-14);
  const auto c100 = mackinnon_critical_values(100);
  expect_rel(c100[0], -3.497501033, 1e-14);
  expect_rel(c100[1], -2.89090644, 1e-14);
  expect_rel(c100[2], -2.5824349, 1e-14);
  const auto c1m = mackinnon_critical_values(1000000);
  expect_rel(c1m[0], -3.430356539316786, 1e-14);
  expect_rel(c1m[1], -2.8615428903042344, 1e-14);
  expect_rel(c1m[2], -2.566771538402809, 1e-14);
  const auto asymptotic = mackinnon_critical_values(0);
  EXPECT_EQ(asymptotic[0], -3.43035);
  EXPECT_EQ(asymptotic[1], -2.86154);
  EXPECT_EQ(asymptotic[2], -2.56677);
  EXPECT_THROW(mackinnon_critical_values(-1), std::invalid_argument);
}

}  // namespace
}  // namespace nabla::analysis
