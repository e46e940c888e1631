#include "nabla/analysis/square_wave_synth.hh"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numbers>
#include <numeric>
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

// Closed form in O(k): the coefficient is the integral over the high
// intervals of e^{-j*omega*floor(t)} (omega = 2*pi*k/N), since bin i holds the
// integral of the wave over [i, i+1). Each high interval clipped to [0, N)
// contributes its partial first and last cells plus a geometric sum over the
// whole cells between them.
std::complex<double> square_wave_coefficient(std::size_t bins, std::size_t k, double period_bins,
                                             double phase_bins) {
  if (!(period_bins > 0.0) || !std::isfinite(period_bins) || !std::isfinite(phase_bins)) {
    throw std::invalid_argument("square_wave_coefficient: period_bins must be > 0, phase finite");
  }
  if (bins == 0) return 0.0;
  const double n = static_cast<double>(bins);
  const double phase = phase_bins - period_bins * std::floor(phase_bins / period_bins);
  // e^{-j omega i} with i*k reduced modulo N in integers, so the angle is exact.
  const auto cell = [&](double i) {
    const auto r = (static_cast<std::uint64_t>(i) % bins) * (k % bins) % bins;
    return std::polar(1.0, -2.0 * std::numbers::pi * static_cast<double>(r) / n);
  };
  const std::complex<double> z = cell(1.0);
  const auto whole_cells = [&](double a, double b) -> std::complex<double> {
    if (b <= a) return 0.0;
    if (k % bins == 0) return b - a;
    return (cell(a) - cell(b)) / (1.0 - z);  // sum_{i=a}^{b-1} z^i
  };
  std::complex<double> sum = 0.0;
  for (double start = phase - period_bins; start < n; start += period_bins) {
    const double s = std::max(start, 0.0);
    const double e = std::min(start + period_bins / 2.0, n);
    if (e <= s) continue;
    const double a = std::ceil(s);
    const double b = std::floor(e);
    if (a > b) {  // inside one cell
      sum += (e - s) * cell(std::floor(s));
      continue;
    }
    if (a > s) sum += (a - s) * cell(a - 1.0);
    sum += whole_cells(a, b);
    if (e > b) sum += (e - b) * cell(b);
  }
  return sum;
}

}  // namespace nabla::analysis

namespace nabla::analysis {

double square_wave_min_coefficient_magnitude(std::size_t bins, std::size_t k, double period_bins) {
  // |W| is periodic in the phase with period 1 bin; when the wave is the
  // fundamental (k * period == bins) its 2k edges sit at fractional offsets
  // phase + r/k'' (k'' = k / gcd(bins, k)), so the period shrinks to 1/k''.
  double span = 1.0;
  int grid = 256;
  if (k > 0 && std::abs(period_bins * static_cast<double>(k) - static_cast<double>(bins)) < 1e-9) {
    span = 1.0 / static_cast<double>(k / std::gcd(bins, k));
    grid = 32;
  }
  double best = std::abs(square_wave_coefficient(bins, k, period_bins, 0.0));
  for (int g = 1; g <= grid; ++g) {
    const double phase = span * static_cast<double>(g) / grid;
    best = std::min(best, std::abs(square_wave_coefficient(bins, k, period_bins, phase)));
  }
  return best;
}

}  // namespace nabla::analysis
