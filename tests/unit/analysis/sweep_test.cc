// Linearity verdicts on closed cases, the step gradient against hand
// arithmetic, and reading a gradient curve between, below and beyond its
// points.
#include "nabla/analysis/sweep.hh"

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <vector>

namespace nabla::analysis {
namespace {

TEST(LinearityVerdict, AllWithinTenPercentIsLinear) {
  const auto v =
      linearity_verdict({{16e6, 1.05, 1.0, 1.1}, {1e6, 1.0, 0.8, 1.2}, {4e6, 0.95, 0.9, 1.0}});
  EXPECT_EQ(v.kind, Linearity::kLinear);
  EXPECT_EQ(v.from_ns, 1e6);
  EXPECT_EQ(v.to_ns, 16e6);
  EXPECT_DOUBLE_EQ(v.band_low, 0.9);
  EXPECT_DOUBLE_EQ(v.band_high, 1.1);
  EXPECT_EQ(describe(v), "linear within ±10% from 1 to 16 ms");
}

TEST(LinearityVerdict, TheFirstAmplitudeWhoseCiLeavesTheBandBreaksIt) {
  // 4 ms is outside in value but its CI reaches the band; 8 ms is wholly out.
  const auto v = linearity_verdict({{1e6, 1.0, 0.95, 1.05},
                                    {4e6, 1.2, 1.05, 1.35},
                                    {8e6, 1.8, 1.7, 1.9},
                                    {16e6, 1.97, 1.9, 2.0}});
  EXPECT_EQ(v.kind, Linearity::kBreaks);
  ASSERT_TRUE(v.breaks_at_ns.has_value());
  EXPECT_EQ(*v.breaks_at_ns, 8e6);
  EXPECT_EQ(describe(v), "breaks at 8 ms (outside 0.90..1.10)");
  const auto below = linearity_verdict({{1e6, 1.0, 0.95, 1.05}, {2e6, 0.5, 0.4, 0.6}});
  EXPECT_EQ(below.kind, Linearity::kBreaks);
}

TEST(LinearityVerdict, AValueOutsideWhoseCiReachesTheBandIsUndecided) {
  const auto v = linearity_verdict({{1e6, 1.0, 0.9, 1.1}, {4e6, 1.3, 1.0, 1.6}});
  EXPECT_EQ(v.kind, Linearity::kUndecided);
  EXPECT_EQ(*v.outside_ns, 4e6);
  EXPECT_NE(describe(v).find("undecided: the gradient at 4 ms"), std::string::npos);
}

TEST(LinearityVerdict, ANearZeroGradientUsesTheFloor) {
  // g0 = 0.01: the band is ±0.05, not ±0.001.
  const auto v = linearity_verdict({{1e6, 0.01, -0.02, 0.04}, {4e6, 0.04, 0.03, 0.05}});
  EXPECT_EQ(v.kind, Linearity::kLinear);
  EXPECT_DOUBLE_EQ(v.band_high, 0.06);
}

TEST(LinearityVerdict, OnePointHasNoVerdict) {
  EXPECT_EQ(linearity_verdict({{3e6, 1.8, 1.7, 1.9}}).kind, Linearity::kSinglePoint);
  EXPECT_EQ(linearity_verdict({}).kind, Linearity::kSinglePoint);
  EXPECT_EQ(describe(linearity_verdict({})), "one amplitude");
}

std::array<std::span<const double>, 4> windows(const std::vector<std::vector<double>>& w) {
  return {std::span<const double>(w[0]), std::span<const double>(w[1]),
          std::span<const double>(w[2]), std::span<const double>(w[3])};
}

TEST(StepGradient, AdjacentWindowsCancelALinearDrift) {
  // Windows' means 10 + 1 * i ms (a service drifting 1 ms a window) plus
  // 3 ms while held, over a 2 ms step: gradient 1.5 exactly, no spread.
  const std::vector<std::vector<double>> w{{13e6, 13e6}, {11e6, 11e6}, {15e6, 15e6}, {13e6, 13e6}};
  const auto s = alternating_step_gradient(windows(w), 2e6, 0.95);
  ASSERT_TRUE(s.has_value());
  EXPECT_DOUBLE_EQ(s->value, 1.5);
  EXPECT_DOUBLE_EQ(s->standard_error, 0.0);
  // The plain difference of held and released windows would read the
  // drift: ((13 + 15) - (11 + 13)) / 2 / 2 = 1.0.
  const std::vector<std::vector<double>> drift_only{
      {10e6, 10e6}, {11e6, 11e6}, {12e6, 12e6}, {13e6, 13e6}};
  EXPECT_NEAR(alternating_step_gradient(windows(drift_only), 2e6, 0.95)->value, 0.0, 1e-12);
}

TEST(StepGradient, ErrorPoolsTheSpreadWithinWindows) {
  // Each window's bins at its mean +- 1 ms: s^2 = 2 ms^2 (4 dof over 8 bins),
  // sum(a_i^2 / n_i) = (1 + 9 + 9 + 1) / 16 / 2 = 0.625, se = sqrt(1.25) / 2.
  const std::vector<std::vector<double>> w{{11e6, 13e6}, {9e6, 11e6}, {11e6, 13e6}, {9e6, 11e6}};
  const auto s = alternating_step_gradient(windows(w), 2e6, 0.95);
  ASSERT_TRUE(s.has_value());
  EXPECT_DOUBLE_EQ(s->value, 1.0);
  EXPECT_NEAR(s->standard_error, std::sqrt(1.25) / 2, 1e-12);
  // t(0.975, 4 df) = 2.776
  EXPECT_NEAR(s->ci_high - s->value, 2.776 * s->standard_error, 1e-3);
  EXPECT_NEAR(s->value - s->ci_low, s->ci_high - s->value, 1e-12);
}

TEST(StepGradient, RefusesAShortWindowOrNoDelay) {
  const std::vector<std::vector<double>> w{{1.0, 2.0}, {1.0, 2.0}, {1.0, 2.0}, {1.0, 2.0}};
  EXPECT_FALSE(alternating_step_gradient(windows(w), 0, 0.95).has_value());
  EXPECT_FALSE(alternating_step_gradient(windows(w), -1e6, 0.95).has_value());
  const std::vector<std::vector<double>> short_window{{1.0, 2.0}, {1.0}, {1.0, 2.0}, {1.0, 2.0}};
  EXPECT_FALSE(alternating_step_gradient(windows(short_window), 1e6, 0.95).has_value());
}

TEST(StepGradient, DisagreementIsDisjointIntervals) {
  EXPECT_FALSE(estimates_disagree(1.0, 2.0, 1.9, 2.5));
  EXPECT_TRUE(estimates_disagree(1.0, 2.0, 2.1, 2.5));
  EXPECT_TRUE(estimates_disagree(2.1, 2.5, 1.0, 2.0));
}

TEST(GradientAt, InterpolatesBetweenAndClampsOutsideTheCurve) {
  const std::vector<CurvePoint> curve{{8e6, 1.9, 0.2}, {2e6, 1.1, 0.1}};
  const GradientAt mid = gradient_at(curve, -5e6);  // the sign of a change does not matter
  EXPECT_DOUBLE_EQ(mid.value, 1.5);
  EXPECT_DOUBLE_EQ(mid.standard_error, 0.15);
  ASSERT_EQ(mid.used.size(), 2u);
  EXPECT_EQ(mid.used[0].amplitude_ns, 2e6);
  EXPECT_EQ(mid.range_low_ns, 2e6);
  EXPECT_EQ(mid.range_high_ns, 8e6);
  EXPECT_FALSE(mid.beyond_range);
  const GradientAt below = gradient_at(curve, 1e6);
  EXPECT_DOUBLE_EQ(below.value, 1.1);
  ASSERT_EQ(below.used.size(), 1u);
  const GradientAt at = gradient_at(curve, 8e6);
  EXPECT_DOUBLE_EQ(at.value, 1.9);
  EXPECT_EQ(at.used.size(), 1u);
  const GradientAt far = gradient_at(curve, 16e6);  // 2x the largest: still in range
  EXPECT_DOUBLE_EQ(far.value, 1.9);
  EXPECT_FALSE(far.beyond_range);
  EXPECT_TRUE(gradient_at(curve, 16.1e6).beyond_range);
  EXPECT_THROW(gradient_at({}, 1e6), std::invalid_argument);
}

}  // namespace
}  // namespace nabla::analysis
