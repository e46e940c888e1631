#pragma once
// What an amplitude sweep and a step tell about a link's gradient, and how a
// prediction reads a gradient measured at several amplitudes (docs/method.md,
// "Amplitude sweeps and step verification").
//
//  - Linearity verdict. The reference is the gradient at the smallest
//    amplitude, g0; the band is g0 ± tolerance, tolerance = 10% of
//    max(|g0|, 0.5) (a floor so a link a type barely depends on is not held
//    to ±10% of almost nothing). A point BREAKS when its whole CI lies
//    outside the band. The curve is LINEAR when no point breaks and every
//    point's value is inside the band; it BREAKS at the first amplitude that
//    breaks; otherwise it is UNDECIDED (a value outside the band whose CI
//    still reaches it: the CIs are too wide to tell).
//  - Step gradient. The delay held and released in four adjacent windows
//    (on, off, on, off): a finite difference whose baseline is measured
//    beside it, weighted so that a service drifting linearly over the
//    windows reads no step. It is an estimate by another method, so the
//    spectral and step estimates DISAGREE when their CIs are disjoint.
//  - Gradient at a delay. Linear interpolation between the measured points
//    (amplitude, gradient) in amplitude order; below the smallest amplitude
//    the smallest's gradient, above the largest the largest's. The standard
//    error is interpolated the same way. A delay beyond 2x the largest
//    measured amplitude is out of range (the caller warns or refuses).
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace nabla::analysis {

inline constexpr double kLinearTolerance = 0.10;
inline constexpr double kLinearToleranceFloor = 0.5;  // of |g0|, see the header
inline constexpr double kRangeFactor = 2.0;

// A link's gradient for one type at one amplitude.
struct SweepPoint {
  double amplitude_ns = 0;
  double value = 0;
  double ci_low = 0;
  double ci_high = 0;
};

enum class Linearity { kSinglePoint, kLinear, kBreaks, kUndecided };

struct LinearityVerdict {
  Linearity kind = Linearity::kSinglePoint;
  double from_ns = 0, to_ns = 0;  // the swept range
  double band_low = 0, band_high = 0;
  std::optional<double> breaks_at_ns;  // kBreaks: the first amplitude outside
  std::optional<double> outside_ns;    // kUndecided: the first value outside
};

// `points` in any order; empty gives kSinglePoint with a zero range.
LinearityVerdict linearity_verdict(std::vector<SweepPoint> points,
                                   double tolerance = kLinearTolerance);

// "linear within ±10% from 2 to 8 ms", "breaks at 8 ms (outside 0.9..1.1)",
// "undecided: ...", "one amplitude".
std::string describe(const LinearityVerdict& verdict);

struct StepEstimate {
  double value = 0;
  double standard_error = 0;
  double ci_low = 0, ci_high = 0;
};

// The step gradient from four adjacent windows with the delay held, released,
// held and released (on, off, on, off), each given by its bins' means:
//   g = (W1 - 3 W2 + 3 W3 - W4) / 4 / delta_l_ns
// with W the windows' means, which cancels any constant and any linear
// drift of the service over the four windows (the weights sum to 0, their
// moment about the windows' order is 0, their sum over the held windows is
// 1). Its standard error pools the bins' spread within the windows,
// sqrt(s^2 * sum(a_i^2 / n_i)) / delta_l_ns; the interval is Student t with
// sum(n_i - 1) degrees of freedom. nullopt with a window of fewer than 2
// bins or delta_l_ns <= 0.
std::optional<StepEstimate> alternating_step_gradient(
    const std::array<std::span<const double>, 4>& windows, double delta_l_ns, double confidence);

// Disjoint intervals.
bool estimates_disagree(double ci_low_a, double ci_high_a, double ci_low_b, double ci_high_b);

// A measured point with its standard error, for interpolation.
struct CurvePoint {
  double amplitude_ns = 0;
  double value = 0;
  double standard_error = 0;
};

struct GradientAt {
  double value = 0;
  double standard_error = 0;
  double range_low_ns = 0, range_high_ns = 0;  // the measured amplitudes
  std::vector<CurvePoint> used;                // one point, or the two it lies between
  bool beyond_range = false;                   // |delay| > kRangeFactor x the largest
};

// Reads the curve at |delay_ns| (see the header). Throws
// std::invalid_argument on an empty curve.
GradientAt gradient_at(std::vector<CurvePoint> curve, double delay_ns);

}  // namespace nabla::analysis
