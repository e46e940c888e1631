#include "nabla/analysis/square_wave_synth.hh"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <stdexcept>

namespace nabla::analysis {
namespace {

// Length of [a, b) covered by the high half-periods
// [phase + q*period, phase + q*period + period/2), q integer.
double high_overlap(double a, double b, double period, double phase) {
  const double half = period / 2.0;
  double covered = 0.0;
  for (double q = std::floor((a - phase) / period) - 1.0;; q += 1.0) {
    const double start = phase + q * period;
    if (start >= b) break;
    covered += std::max(0.0, std::min(b, start + half) - std::max(a, start));
  }
  return covered;
}

}  // namespace

std::vector<double> square_wave_bin_means(std::size_t bins, double period_bins, double phase_bins,
                                          double amplitude) {
  if (!(period_bins > 0.0) || !std::isfinite(period_bins)) {
    throw std::invalid_argument("square_wave_bin_means: period_bins must be > 0");
  }
  if (!std::isfinite(phase_bins)) {
    throw std::invalid_argument("square_wave_bin_means: phase_bins must be finite");
  }
  const double phase = phase_bins - period_bins * std::floor(phase_bins / period_bins);
  std::vector<double> series(bins);
  for (std::size_t i = 0; i < bins; ++i) {
    const double a = static_cast<double>(i);
    series[i] = amplitude * high_overlap(a, a + 1.0, period_bins, phase);
  }
  return series;
}

std::complex<double> square_wave_coefficient(std::size_t bins, std::size_t k, double period_bins,
                                             double phase_bins) {
  const auto wave = square_wave_bin_means(bins, period_bins, phase_bins, 1.0);
  std::complex<double> sum = 0.0;
  const double step = -2.0 * std::numbers::pi / static_cast<double>(bins);
  for (std::size_t i = 0; i < bins; ++i) {
    // Reduce i*k modulo bins before the multiply so the angle stays exact.
    const double angle = step * static_cast<double>((i * k) % bins);
    sum += wave[i] * std::complex<double>(std::cos(angle), std::sin(angle));
  }
  return sum;
}

}  // namespace nabla::analysis

namespace nabla::analysis {

double square_wave_min_coefficient_magnitude(std::size_t bins, std::size_t k, double period_bins) {
  constexpr int kGrid = 256;
  double best = std::abs(square_wave_coefficient(bins, k, period_bins, 0.0));
  for (int g = 1; g <= kGrid; ++g) {
    const double phase = static_cast<double>(g) / kGrid;
    best = std::min(best, std::abs(square_wave_coefficient(bins, k, period_bins, phase)));
  }
  return best;
}

}  // namespace nabla::analysis
