#pragma once
// How much the other links' delays move each link's gradient in a phase
// where several links are delayed at once (docs/method.md, "Interaction
// check").
//
// A response to delays d_l that is not their weighted sum, e.g.
//   r = b + sum_l g_l d_l + sum_{j<l} c_jl d_j d_l,
// read at link j's own frequency gives g_j + sum_l c_jl * (mean of d_l):
// the gradient with the other links at their mean delay, not at 0. With
// square waves d_l = delta_l * x_l (x_l the unit bin-mean wave), the binned
// series is fitted by least squares on a constant, every x_l and every
// product wave p_jl (the fraction of a bin during which both are high,
// frequency_plan.hh); the product's own information sits at the lines
// k_j +- k_l the frequency plan keeps clear. Then
//   gamma_jl = c_jl * delta_j * delta_l and
//   bias_j   = sum_l gamma_jl / (2 delta_j)   (mean of x_l = 1/2),
// with its variance from the fit's covariance and residuals (the bins taken
// as independent).
#include <cstddef>
#include <optional>
#include <vector>

namespace nabla::analysis {

struct WaveInSeries {
  double period_bins = 0;  // > 0
  double phase_bins = 0;   // rising edge, as square_wave_bin_means takes it
  double delta_l_ns = 0;   // the actual step, > 0
};

struct InteractionBias {
  double value = 0;           // in gradient units (ns of response per ns)
  double standard_error = 0;  // of value
};

// Per wave, the bias its gradient carries from the other waves; nullopt
// with fewer than two waves, fewer bins than 2 x the fitted columns, a
// non-positive step, or columns that cannot be separated.
std::optional<std::vector<InteractionBias>> interaction_biases(
    const std::vector<double>& series_ns, const std::vector<WaveInSeries>& waves);

}  // namespace nabla::analysis
