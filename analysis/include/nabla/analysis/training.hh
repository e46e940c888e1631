#pragma once
// Training phase of the link-gradient method (paper section 3, steps 2-4):
// the spectrum statistics of the unperturbed response-time series and the
// choice of injection frequency and amplitude.
//
// Step 2: the first M*N bins of the series are cut into M chunks of N bins
// (N a power of two); each chunk's rfft gives one FFT^0 sample per bin k.
// Per bin: the complex mean, and the "standard deviation (both complex
// numbers)" of the paper defined as sigma_re + j*sigma_im (sample standard
// deviations, ddof = 1, of the real and imaginary parts). The scalar used for
// the amplitude is its modulus |sigma| = sqrt(sigma_re^2 + sigma_im^2) =
// sqrt(sum |X - mean|^2 / (M-1)), the RMS size of a chunk's deviation from the
// mean coefficient — the same sigma (E|Z|^2 = sigma^2) the gradient's CI uses.
//
// Step 3, units. The paper writes A_d = d*sigma(FFT^0)(f) and, through eq. 3,
// injects a wave whose coefficient has magnitude k_d*A/sin(pi/2n). Read
// consistently, d*sigma is a *spectral* magnitude (ns summed over N bins): the
// injection should move the coefficient at f_d by d standard deviations of
// its natural variation. The time-domain amplitude that does so is
//     A_ns = d * sigma(f_d) / |W|,   |W| = k_d / sin(pi/2n) in eq. 3's form.
// Because bin means of a wave whose edges fall between bins see a smaller
// coefficient (gradient.hh), we divide by the smallest |W| over all phases,
// min_theta |W(theta)| (k_d*cot(pi/2n) for integer n): the injection then
// reaches d sigma whatever the injector's phase. amplitude_ns is the delay
// the response time should show, i.e. the delay for a gradient of 1; the
// adaptive sub-phase divides it by a rough gradient (adapt_amplitude_ns).
//
// Step 4: among k_d = 1 .. N/min_bins_per_period (at least
// min_bins_per_period bins per period, default 8 after the paper's section 4
// accuracy results) pick the one with the smallest A_ns; ties go to the lower
// k_d.
//
// Known bias (inherited from the paper): sigma at the chosen k_d is the
// minimum of noisy estimates (M = 9 chunks: ~25% relative error each), so it
// is biased low and the realised SNR of the injection is typically 0.5-0.8 d,
// not d. Raise M or d when precision matters more than intrusiveness.
#include <complex>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace nabla::analysis {

struct TrainingOptions {
  std::size_t bins = 128;               // N, a power of two >= 8
  std::size_t chunks = 9;               // M >= 2
  double delay_scale = 30.0;            // d
  std::size_t min_bins_per_period = 8;  // 2n >= this; >= 4
};

struct TrainingResult {
  std::int64_t bin_width_ns = 0;
  std::size_t bins = 0;    // N
  std::size_t chunks = 0;  // M
  int k_d = 0;
  double period_bins = 0;                       // 2n = N / k_d
  double period_ns = 0;                         // N * bin_width / k_d
  double frequency_hz = 0;                      // k_d / (N * bin_width)
  double amplitude_ns = 0;                      // A_d as a response-time delay (gradient 1)
  double spectral_amplitude_ns = 0;             // d * sigma(f_d), the target |dFFT(f_d)|
  std::vector<std::complex<double>> fft0_mean;  // N/2+1 bins
  std::vector<std::complex<double>> fft0_std;   // sigma_re + j sigma_im
  std::vector<double> fft0_sigma;               // |fft0_std|
  std::vector<double> amplitude_by_k_ns;        // A_ns per k; 0 for non-candidates
};

// Throws std::invalid_argument naming the option for: N not a power of two
// >= 8, M < 2, fewer than M*N bins, d <= 0, min_bins_per_period < 4 or > N,
// bin_width_ns <= 0.
TrainingResult train(std::span<const double> series, std::int64_t bin_width_ns,
                     const TrainingOptions& options = {});

// Adaptive sub-phase: A_d' = A_d / g' for a rough gradient g', capped at
// max_amplitude_ns (a gradient near 0 would otherwise ask for an unbounded
// delay). Non-positive or non-finite g' gives max_amplitude_ns.
double adapt_amplitude_ns(double amplitude_ns, double rough_gradient, double max_amplitude_ns);

}  // namespace nabla::analysis
