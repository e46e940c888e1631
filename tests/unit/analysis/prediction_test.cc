#include "nabla/analysis/prediction.hh"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <stdexcept>
#include <vector>

#include "nabla/analysis/descriptive.hh"

namespace nabla::analysis {
namespace {

// rt1 = 100 ms (var 4 ms^2); link A +10 ms (var 1 ms^2), g = 2 +- 0.1;
// link B -5 ms (var 0.25 ms^2), g = 0.5 exact. Literals from scipy.
TEST(Prediction, LiteralTwoLinks) {
  const std::vector<LinkChange> links{{1e7, 1e12, 2.0, 0.01}, {-5e6, 2.5e11, 0.5, 0.0}};
  const auto p = predict_response_time(1e8, 4e12, links, 0.95);
  EXPECT_DOUBLE_EQ(p.rt_ns, 1.175e8);
  EXPECT_DOUBLE_EQ(p.variance, 9072500000000.0);
  EXPECT_NEAR(p.stddev_ns, 3012059.0963658066, 1e-6);
  EXPECT_NEAR(p.ci_low_ns, 111596472.65181676, 1e-4);
  EXPECT_NEAR(p.ci_high_ns, 123403527.34818324, 1e-4);
}

// With exact gradients the variance is the paper's section 5.3 formula.
TEST(Prediction, ReducesToPaperFormulaForExactGradients) {
  const std::vector<LinkChange> links{{1e7, 1e12, 2.0, 0.0}, {-5e6, 2.5e11, 0.5, 0.0}};
  const auto p = predict_response_time(1e8, 4e12, links);
  EXPECT_DOUBLE_EQ(p.variance, 4e12 + 1e12 * 4 + 2.5e11 * 0.25);
  EXPECT_NEAR(p.stddev_ns, 2839454.172900137, 1e-6);
}

TEST(Prediction, EdgeCasesAndErrors) {
  const auto none = predict_response_time(5e6, 0.0, {});
  EXPECT_DOUBLE_EQ(none.rt_ns, 5e6);
  EXPECT_DOUBLE_EQ(none.ci_low_ns, 5e6);
  EXPECT_DOUBLE_EQ(none.ci_high_ns, 5e6);
  EXPECT_THROW(predict_response_time(1, -1, {}), std::invalid_argument);
  EXPECT_THROW(predict_response_time(1, 1, {}, 1.0), std::invalid_argument);
  const std::vector<LinkChange> bad{{1, -1, 1, 0}};
  EXPECT_THROW(predict_response_time(1, 1, bad), std::invalid_argument);
}

TEST(Prediction, FromGradientEstimate) {
  GradientEstimate g;
  g.value = 1.5;
  g.standard_error = 0.2;
  const auto l = link_change(g, 3e6, 1e10);
  EXPECT_DOUBLE_EQ(l.gradient, 1.5);
  EXPECT_DOUBLE_EQ(l.gradient_variance, 0.04);
  EXPECT_DOUBLE_EQ(l.delta_latency_ns, 3e6);
  EXPECT_DOUBLE_EQ(l.delta_latency_variance, 1e10);
}

// Monte Carlo: with independent normal rt1, dl_i and g_i the propagated
// variance matches the empirical variance of rt1 + sum dl_i * g_i, and the
// 95% interval covers the truth ~95% of the time; the paper's formula (no
// gradient term) under-covers when the gradient is uncertain.
TEST(Prediction, VarianceMatchesMonteCarlo) {
  const std::vector<LinkChange> links{{3e7, 4e12, 2.0, 0.01}, {-1e7, 1e12, 1.0, 0.0025}};
  const double rt1 = 1e8, rt1_var = 1e12;
  const auto p = predict_response_time(rt1, rt1_var, links);
  std::vector<LinkChange> exact = links;
  for (auto& l : exact) l.gradient_variance = 0;
  const auto paper = predict_response_time(rt1, rt1_var, exact);

  std::mt19937_64 rng(99);
  std::normal_distribution<double> z(0.0, 1.0);
  RunningStats outcome;
  int covered = 0, covered_paper = 0;
  constexpr int kTrials = 20000;
  for (int t = 0; t < kTrials; ++t) {
    // One realisation of the truth: the measured inputs are off by their errors.
    double truth = rt1 + std::sqrt(rt1_var) * z(rng);
    for (const auto& l : links) {
      truth += (l.delta_latency_ns + std::sqrt(l.delta_latency_variance) * z(rng)) *
               (l.gradient + std::sqrt(l.gradient_variance) * z(rng));
    }
    outcome.add(truth);
    covered += (p.ci_low_ns <= truth && truth <= p.ci_high_ns) ? 1 : 0;
    covered_paper += (paper.ci_low_ns <= truth && truth <= paper.ci_high_ns) ? 1 : 0;
  }
  EXPECT_NEAR(outcome.mean(), p.rt_ns, 4 * p.stddev_ns / std::sqrt(kTrials));
  EXPECT_NEAR(outcome.variance(), p.variance, 0.04 * p.variance);
  EXPECT_NEAR(static_cast<double>(covered) / kTrials, 0.95, 0.01);
  EXPECT_LT(static_cast<double>(covered_paper) / kTrials, 0.90);
}

}  // namespace
}  // namespace nabla::analysis
