#include "nabla/analysis/training.hh"

#include <bit>
#include <cmath>
#include <stdexcept>

#include "nabla/analysis/descriptive.hh"
#include "nabla/analysis/fft.hh"
#include "nabla/analysis/square_wave_synth.hh"

namespace nabla::analysis {
namespace {

void validate(std::size_t size, std::int64_t bin_width_ns, const TrainingOptions& o) {
  if (o.bins < 8 || !std::has_single_bit(o.bins)) {
    throw std::invalid_argument("training: bins (N) must be a power of two >= 8");
  }
  if (o.chunks < 2) throw std::invalid_argument("training: chunks (M) must be >= 2");
  if (size < o.bins * o.chunks) {
    throw std::invalid_argument("training: series shorter than chunks * bins");
  }
  if (!(o.delay_scale > 0.0)) throw std::invalid_argument("training: delay_scale must be > 0");
  if (o.min_bins_per_period < 4 || o.min_bins_per_period > o.bins) {
    throw std::invalid_argument("training: min_bins_per_period must be in [4, bins]");
  }
  if (bin_width_ns <= 0) throw std::invalid_argument("training: bin_width_ns must be > 0");
}

}  // namespace

TrainingResult train(std::span<const double> series, std::int64_t bin_width_ns,
                     const TrainingOptions& options) {
  validate(series.size(), bin_width_ns, options);
  const std::size_t n = options.bins;
  const std::size_t m = options.chunks;
  const std::size_t half = n / 2 + 1;

  std::vector<std::vector<std::complex<double>>> spectra;
  spectra.reserve(m);
  for (std::size_t c = 0; c < m; ++c) spectra.push_back(rfft(series.subspan(c * n, n)));

  TrainingResult out;
  out.bin_width_ns = bin_width_ns;
  out.bins = n;
  out.chunks = m;
  out.fft0_mean.resize(half);
  out.fft0_std.resize(half);
  out.fft0_sigma.resize(half);
  std::vector<double> re(m), im(m);
  for (std::size_t k = 0; k < half; ++k) {
    for (std::size_t c = 0; c < m; ++c) {
      re[c] = spectra[c][k].real();
      im[c] = spectra[c][k].imag();
    }
    out.fft0_mean[k] = {mean(re), mean(im)};
    out.fft0_std[k] = {stddev(re, 1), stddev(im, 1)};
    out.fft0_sigma[k] = std::abs(out.fft0_std[k]);
  }

  out.amplitude_by_k_ns.assign(half, 0.0);
  const std::size_t k_max = n / options.min_bins_per_period;
  for (std::size_t k = 1; k <= k_max; ++k) {
    const double period = static_cast<double>(n) / static_cast<double>(k);
    const double gain = square_wave_min_coefficient_magnitude(n, k, period);
    const double amplitude = options.delay_scale * out.fft0_sigma[k] / gain;
    out.amplitude_by_k_ns[k] = amplitude;
    if (out.k_d == 0 || amplitude < out.amplitude_ns) {
      out.k_d = static_cast<int>(k);
      out.amplitude_ns = amplitude;
      out.spectral_amplitude_ns = options.delay_scale * out.fft0_sigma[k];
    }
  }
  out.period_bins = static_cast<double>(n) / out.k_d;
  out.period_ns = out.period_bins * static_cast<double>(bin_width_ns);
  out.frequency_hz = 1e9 / out.period_ns;
  return out;
}

double adapt_amplitude_ns(double amplitude_ns, double rough_gradient, double max_amplitude_ns) {
  if (!(rough_gradient > 0.0) || !std::isfinite(rough_gradient)) return max_amplitude_ns;
  return std::min(max_amplitude_ns, amplitude_ns / rough_gradient);
}

}  // namespace nabla::analysis
