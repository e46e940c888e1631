// Sweep verdicts, step gradients and reading a gradient curve; see sweep.hh.
#include "nabla/analysis/sweep.hh"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "nabla/analysis/distributions.hh"

namespace nabla::analysis {
namespace {

std::string ms(double ns) {
  const double v = std::round(ns / 1e4) / 100.0;  // 0.01 ms
  std::string s = std::to_string(v);
  s.erase(s.find_last_not_of('0') + 1);
  if (s.back() == '.') s.pop_back();
  return s;
}

std::string two_decimals(double v) {
  std::string s = std::to_string(std::round(v * 100.0) / 100.0);
  return s.substr(0, s.find('.') + 3);
}

}  // namespace

LinearityVerdict linearity_verdict(std::vector<SweepPoint> points, double tolerance) {
  LinearityVerdict v;
  if (points.empty()) return v;
  std::sort(points.begin(), points.end(), [](const SweepPoint& a, const SweepPoint& b) {
    return a.amplitude_ns < b.amplitude_ns;
  });
  v.from_ns = points.front().amplitude_ns;
  v.to_ns = points.back().amplitude_ns;
  if (points.size() == 1) return v;
  const double g0 = points.front().value;
  const double half = tolerance * std::max(std::abs(g0), kLinearToleranceFloor);
  v.band_low = g0 - half;
  v.band_high = g0 + half;
  for (const SweepPoint& p : points) {
    if (p.ci_low > v.band_high || p.ci_high < v.band_low) {
      v.kind = Linearity::kBreaks;
      v.breaks_at_ns = p.amplitude_ns;
      return v;
    }
    if (!v.outside_ns && (p.value > v.band_high || p.value < v.band_low)) {
      v.outside_ns = p.amplitude_ns;
    }
  }
  v.kind = v.outside_ns ? Linearity::kUndecided : Linearity::kLinear;
  return v;
}

std::string describe(const LinearityVerdict& v) {
  const std::string band =
      " (outside " + two_decimals(v.band_low) + ".." + two_decimals(v.band_high) + ")";
  switch (v.kind) {
    case Linearity::kSinglePoint:
      return "one amplitude";
    case Linearity::kLinear:
      return "linear within ±10% from " + ms(v.from_ns) + " to " + ms(v.to_ns) + " ms";
    case Linearity::kBreaks:
      return "breaks at " + ms(*v.breaks_at_ns) + " ms" + band;
    case Linearity::kUndecided:
      return "undecided: the gradient at " + ms(*v.outside_ns) + " ms is" + band +
             " but its CI reaches the band";
  }
  return {};
}

std::optional<StepEstimate> alternating_step_gradient(
    const std::array<std::span<const double>, 4>& windows, double delta_l_ns, double confidence) {
  constexpr std::array<double, 4> kWeights{0.25, -0.75, 0.75, -0.25};
  if (!(delta_l_ns > 0)) return std::nullopt;
  double diff = 0, squares = 0, weight_over_n = 0, dof = 0;
  for (std::size_t i = 0; i < windows.size(); ++i) {
    const std::span<const double> w = windows[i];
    if (w.size() < 2) return std::nullopt;
    const auto n = static_cast<double>(w.size());
    double sum = 0;
    for (double b : w) sum += b;
    const double mean = sum / n;
    for (double b : w) squares += (b - mean) * (b - mean);
    diff += kWeights[i] * mean;
    weight_over_n += kWeights[i] * kWeights[i] / n;
    dof += n - 1;
  }
  StepEstimate s;
  s.value = diff / delta_l_ns;
  s.standard_error = std::sqrt(squares / dof * weight_over_n) / delta_l_ns;
  const double q = student_t_quantile((1 + confidence) / 2, dof);
  s.ci_low = s.value - q * s.standard_error;
  s.ci_high = s.value + q * s.standard_error;
  return s;
}

bool estimates_disagree(double ci_low_a, double ci_high_a, double ci_low_b, double ci_high_b) {
  return ci_high_a < ci_low_b || ci_high_b < ci_low_a;
}

GradientAt gradient_at(std::vector<CurvePoint> curve, double delay_ns) {
  if (curve.empty()) throw std::invalid_argument("gradient_at: no measured point");
  std::sort(curve.begin(), curve.end(), [](const CurvePoint& a, const CurvePoint& b) {
    return a.amplitude_ns < b.amplitude_ns;
  });
  const double x = std::abs(delay_ns);
  GradientAt g;
  g.range_low_ns = curve.front().amplitude_ns;
  g.range_high_ns = curve.back().amplitude_ns;
  g.beyond_range = x > kRangeFactor * g.range_high_ns;
  const auto upper =
      std::upper_bound(curve.begin(), curve.end(), x,
                       [](double v, const CurvePoint& p) { return v < p.amplitude_ns; });
  if (upper == curve.begin() || upper == curve.end() || (upper - 1)->amplitude_ns == x) {
    const CurvePoint& p = upper == curve.begin() ? curve.front() : *(upper - 1);
    g.value = p.value;
    g.standard_error = p.standard_error;
    g.used = {p};
    return g;
  }
  const CurvePoint& a = *(upper - 1);
  const CurvePoint& b = *upper;
  const double f = (x - a.amplitude_ns) / (b.amplitude_ns - a.amplitude_ns);
  g.value = a.value + f * (b.value - a.value);
  g.standard_error = a.standard_error + f * (b.standard_error - a.standard_error);
  g.used = {a, b};
  return g;
}

}  // namespace nabla::analysis
