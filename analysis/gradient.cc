#include "nabla/analysis/gradient.hh"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <numbers>
#include <stdexcept>
#include <vector>

#include "nabla/analysis/distributions.hh"
#include "nabla/analysis/fft.hh"
#include "nabla/analysis/square_wave_synth.hh"

namespace nabla::analysis {
namespace {

constexpr int kPhaseGridPerBin = 32;

void validate(std::size_t n, int k_d, double delta_l_ns, const GradientOptions& options) {
  if (n < 8 || !std::has_single_bit(n)) {
    throw std::invalid_argument("gradient: series length N must be a power of two >= 8");
  }
  if (k_d < 1) throw std::invalid_argument("gradient: k_d must be >= 1");
  if (static_cast<double>(n) / k_d < 4.0) {
    throw std::invalid_argument("gradient: N / k_d must be >= 4 bins per period");
  }
  if (!(delta_l_ns > 0.0) || !std::isfinite(delta_l_ns)) {
    throw std::invalid_argument("gradient: delta_l_ns must be > 0");
  }
  if (!(options.confidence > 0.0 && options.confidence < 1.0)) {
    throw std::invalid_argument("gradient: confidence must be in (0, 1)");
  }
}

// The noise bins: the `wanted` bins nearest to k_d among 1 .. N/2-1 that are
// not k_d, not an odd harmonic of k_d or an alias of one (N - h), and not
// one of `exclude`.
std::vector<std::size_t> pick_noise_bins(std::size_t n, std::size_t k_d, std::size_t wanted,
                                         const std::vector<std::size_t>& exclude) {
  std::vector<bool> excluded(n, false);
  for (std::size_t k : exclude) {
    if (k < n) excluded[k] = excluded[(n - k) % n] = true;
  }
  for (std::size_t m = 1; m < 2 * n; m += 2) {
    const std::size_t h = (m * k_d) % n;
    excluded[h] = true;
    excluded[(n - h) % n] = true;
  }
  std::vector<std::size_t> candidates;
  for (std::size_t k = 1; k < n / 2; ++k) {
    if (!excluded[k]) candidates.push_back(k);
  }
  const auto distance = [k_d](std::size_t k) { return k > k_d ? k - k_d : k_d - k; };
  std::stable_sort(candidates.begin(), candidates.end(),
                   [&](std::size_t a, std::size_t b) { return distance(a) < distance(b); });
  if (candidates.size() > wanted) candidates.resize(wanted);
  return candidates;
}

struct PhaseFit {
  double phase_bins = 0;
  std::complex<double> model;  // W(theta) for a unit wave
};

// Projection of D on the direction of W: the least-squares amplitude times |W|.
double projection(std::complex<double> d, std::complex<double> w) {
  return (d * std::conj(w)).real() / std::abs(w);
}

// theta maximising the projection: grid over one bin of fractional offsets
// combined with every whole-bin shift (W(theta + 1) = W(theta) e^{-2 pi j k/N}
// because the wave is N-periodic), then golden-section refinement.
PhaseFit fit_phase(std::complex<double> d, std::size_t n, int k_d, double period) {
  const auto k = static_cast<std::size_t>(k_d);
  std::vector<std::complex<double>> base(kPhaseGridPerBin);
  for (int g = 0; g < kPhaseGridPerBin; ++g) {
    base[g] = square_wave_coefficient(n, k, period, static_cast<double>(g) / kPhaseGridPerBin);
  }
  const double shift_angle = -2.0 * std::numbers::pi * k_d / static_cast<double>(n);
  const auto shifts = static_cast<std::size_t>(std::ceil(period));
  double best = -std::numeric_limits<double>::infinity();
  double best_theta = 0;
  for (std::size_t m = 0; m < shifts; ++m) {
    const std::complex<double> rot = std::polar(1.0, shift_angle * static_cast<double>(m));
    for (int g = 0; g < kPhaseGridPerBin; ++g) {
      const double p = projection(d, base[g] * rot);
      if (p > best) {
        best = p;
        best_theta = static_cast<double>(m) + static_cast<double>(g) / kPhaseGridPerBin;
      }
    }
  }
  const auto score = [&](double theta) {
    return projection(d, square_wave_coefficient(n, k, period, theta));
  };
  double lo = best_theta - 1.0 / kPhaseGridPerBin;
  double hi = best_theta + 1.0 / kPhaseGridPerBin;
  const double inv_phi = (std::sqrt(5.0) - 1.0) / 2.0;
  double a = hi - inv_phi * (hi - lo);
  double b = lo + inv_phi * (hi - lo);
  double fa = score(a);
  double fb = score(b);
  for (int it = 0; it < 30; ++it) {
    if (fa > fb) {
      hi = b;
      b = a;
      fb = fa;
      a = hi - inv_phi * (hi - lo);
      fa = score(a);
    } else {
      lo = a;
      a = b;
      fa = fb;
      b = lo + inv_phi * (hi - lo);
      fb = score(b);
    }
  }
  double theta = (lo + hi) / 2.0;
  if (score(theta) < best) theta = best_theta;
  theta -= period * std::floor(theta / period);
  return {theta, square_wave_coefficient(n, k, period, theta)};
}

double time_domain_value(std::span<const double> series, double period, double phase,
                         double delta_l_ns) {
  const auto wave = square_wave_bin_means(series.size(), period, phase, 1.0);
  double high_sum = 0, low_sum = 0;
  std::size_t high_n = 0, low_n = 0;
  for (std::size_t i = 0; i < series.size(); ++i) {
    if (wave[i] >= 1.0 - 1e-9) {
      high_sum += series[i];
      ++high_n;
    } else if (wave[i] <= 1e-9) {
      low_sum += series[i];
      ++low_n;
    }
  }
  if (high_n == 0 || low_n == 0) return std::numeric_limits<double>::quiet_NaN();
  return (high_sum / static_cast<double>(high_n) - low_sum / static_cast<double>(low_n)) /
         delta_l_ns;
}

}  // namespace

GradientEstimate estimate_gradient_with_baseline_spectrum(
    std::span<const double> series, std::span<const std::complex<double>> baseline_spectrum,
    int k_d, double delta_l_ns, const GradientOptions& options) {
  const std::size_t n = series.size();
  validate(n, k_d, delta_l_ns, options);
  if (!baseline_spectrum.empty() && baseline_spectrum.size() != n / 2 + 1) {
    throw std::invalid_argument("gradient: baseline spectrum must have N/2+1 bins");
  }
  auto spectrum = rfft(series);
  if (!baseline_spectrum.empty()) {
    for (std::size_t k = 0; k < spectrum.size(); ++k) spectrum[k] -= baseline_spectrum[k];
  }

  GradientEstimate out;
  out.k_d = k_d;
  out.bins = n;
  out.period_bins = static_cast<double>(n) / k_d;
  out.coefficient = spectrum[static_cast<std::size_t>(k_d)];

  const auto noise =
      pick_noise_bins(n, static_cast<std::size_t>(k_d), options.noise_bins, options.exclude_bins);
  if (noise.size() < 2) throw std::invalid_argument("gradient: fewer than 2 noise bins available");
  double power = 0;
  for (std::size_t k : noise) power += std::norm(spectrum[k]);
  out.noise_bins = noise.size();
  out.noise_sigma = std::sqrt(power / static_cast<double>(noise.size()));
  const double nu = 2.0 * static_cast<double>(noise.size());
  const double magnitude = std::abs(out.coefficient);
  out.snr =
      out.noise_sigma > 0 ? magnitude / out.noise_sigma : std::numeric_limits<double>::infinity();
  out.eq5_value = magnitude * std::sin(std::numbers::pi / out.period_bins) / (delta_l_ns * k_d);

  std::complex<double> model;
  double amplitude;  // least-squares a in D ~ a * W, ns
  if (options.phase_bins) {
    out.phase_given = true;
    out.phase_bins =
        *options.phase_bins - out.period_bins * std::floor(*options.phase_bins / out.period_bins);
    model =
        square_wave_coefficient(n, static_cast<std::size_t>(k_d), out.period_bins, out.phase_bins);
    amplitude = (out.coefficient * std::conj(model)).real() / std::norm(model);
  } else {
    const PhaseFit fit = fit_phase(out.coefficient, n, k_d, out.period_bins);
    out.phase_bins = fit.phase_bins;
    model = fit.model;
    amplitude = std::max(0.0, projection(out.coefficient, model) / std::abs(model));
  }
  out.value = amplitude / delta_l_ns;
  out.standard_error = out.noise_sigma / (std::sqrt(2.0) * std::abs(model) * delta_l_ns);

  const double t = student_t_quantile((1.0 + options.confidence) / 2.0, nu);
  const double half_width = t * out.standard_error;
  if (out.phase_given) {
    out.ci_low = out.value - half_width;
    out.ci_high = out.value + half_width;
    out.detected = std::abs(out.value) > half_width;
  } else {
    const double alpha = 1.0 - options.confidence;
    const double disc_radius =
        out.noise_sigma * std::sqrt(nu / 2.0 * (std::pow(alpha, -2.0 / nu) - 1.0));
    out.detected = magnitude > disc_radius;
    if (out.detected) {
      out.ci_low = std::max(0.0, out.value - half_width);
      out.ci_high = out.value + half_width;
    } else {
      const double min_gain =
          square_wave_min_coefficient_magnitude(n, static_cast<std::size_t>(k_d), out.period_bins);
      out.ci_low = 0.0;
      out.ci_high = (magnitude + disc_radius) / (min_gain * delta_l_ns);
    }
  }
  out.time_domain_value = time_domain_value(series, out.period_bins, out.phase_bins, delta_l_ns);
  return out;
}

GradientEstimate estimate_gradient(std::span<const double> series,
                                   std::optional<std::span<const double>> baseline, int k_d,
                                   double delta_l_ns, const GradientOptions& options) {
  if (!baseline)
    return estimate_gradient_with_baseline_spectrum(series, {}, k_d, delta_l_ns, options);
  if (baseline->size() != series.size()) {
    throw std::invalid_argument("gradient: baseline series must have the same N as the series");
  }
  const auto baseline_spectrum = rfft(*baseline);
  return estimate_gradient_with_baseline_spectrum(series, baseline_spectrum, k_d, delta_l_ns,
                                                  options);
}

GradientEstimate estimate_gradient(std::span<const double> series,
                                   std::optional<std::span<const double>> baseline, int k_d,
                                   double delta_l_ns, double confidence) {
  GradientOptions options;
  options.confidence = confidence;
  return estimate_gradient(series, baseline, k_d, delta_l_ns, options);
}

int k_d_for_period(std::size_t bins, std::int64_t bin_width_ns, std::int64_t period_ns) {
  if (bins == 0 || bin_width_ns <= 0 || period_ns <= 0) {
    throw std::invalid_argument("gradient: bins, bin width and period must be > 0");
  }
  const auto max = std::numeric_limits<std::int64_t>::max();
  if (bins > static_cast<std::size_t>(max / bin_width_ns)) {
    throw std::invalid_argument("gradient: bins * bin width overflows int64");
  }
  const std::int64_t span_ns = static_cast<std::int64_t>(bins) * bin_width_ns;
  if (span_ns % period_ns != 0) {
    throw std::invalid_argument(
        "gradient: period must divide bins * bin width a whole number of times (k_d integer)");
  }
  const std::int64_t k_d = span_ns / period_ns;
  if (k_d < 1 || static_cast<std::int64_t>(bins) < 4 * k_d) {
    throw std::invalid_argument(
        "gradient: period must span at least 4 bins and at most all of them");
  }
  return static_cast<int>(k_d);
}

namespace {

std::int64_t earliest_ns(std::span<const LatencyRecord> records) {
  if (records.empty()) throw std::invalid_argument("gradient: no records");
  std::int64_t t = records.front().t_ns;
  for (const auto& r : records) t = std::min(t, r.t_ns);
  return t;
}

}  // namespace

std::vector<TypedGradient> gradients_by_type(
    std::span<const LatencyRecord> records,
    std::optional<std::span<const LatencyRecord>> baseline_records, std::int64_t bin_width_ns,
    std::size_t bins, std::int64_t period_ns, double delta_l_ns, const GradientOptions& options) {
  const int k_d = k_d_for_period(bins, bin_width_ns, period_ns);
  const auto measured = bin_by_type(records, earliest_ns(records), bin_width_ns, bins);
  std::vector<BinnedSeries> baseline;
  if (baseline_records) {
    baseline = bin_by_type(*baseline_records, earliest_ns(*baseline_records), bin_width_ns, bins);
  }
  std::vector<TypedGradient> out;
  out.reserve(measured.size());
  for (const auto& series : measured) {
    TypedGradient g;
    g.type = series.type;
    g.records = series.records;
    g.filled_bins = series.filled_bins;
    g.reliable = series.reliable;
    std::optional<std::span<const double>> base;
    for (const auto& b : baseline) {
      if (b.type != series.type) continue;
      base = b.mean_latency_ns;
      g.has_baseline = true;
      g.reliable = g.reliable && b.reliable;
    }
    g.estimate = estimate_gradient(series.mean_latency_ns, base, k_d, delta_l_ns, options);
    out.push_back(std::move(g));
  }
  return out;
}

}  // namespace nabla::analysis
