#pragma once
// Link gradient from one measurement phase (link-gradient paper, section 2.3,
// equation 5), with a confidence interval and a time-domain cross-check.
//
// Inputs: a response-time series of N bins (N a power of two) measured while
// the link carried a square-wave delay of actual mean amplitude delta_l_ns at
// injection frequency k_d (k_d whole cycles over the N bins, period
// P = N/k_d bins = 2n), and optionally the baseline FFT^0 (the spectrum of an
// unperturbed series, or the training-phase mean spectrum).
//
// Without a baseline FFT^0(f_d) = 0: a stationary series has no deterministic
// component at f_d != 0, so the measured coefficient is signal plus noise and
// the noise is accounted for by the CI. (Subtracting one noisy baseline series
// adds its noise; the training mean over M chunks adds only 1/M of it.)
//
// The square wave in a *binned* series. The paper's equation 3 gives the
// wave's coefficient at f_d as k_d*A/sin(pi/2n) independent of phase. That is
// exact only for point samples, or for bin means when the wave's edges fall
// on bin boundaries. A bin mean sees the fraction of the bin that was high, so
// the coefficient is (for integer n) W(theta) = k_d/sin(pi/2n) *
// ((1-phi) + phi*e^{-j*pi/n}) times a phase factor, phi the fractional bin
// offset of the edge: its
// magnitude drops to cos(pi/2n) of the paper's value at phi = 1/2 (-7.6% at
// 2n = 8 bins per period, the paper's recommended minimum). The injector's
// clock is not synchronised with the bins, so we model it: W(theta) is the
// DFT of square_wave_bin_means (square_wave_synth.hh), and the estimate is
// the least-squares (Gaussian maximum-likelihood) fit D ~ a*W(theta) with
// D = FFT^d(f_d) - FFT^0(f_d):
//   - phase known (GradientOptions::phase_bins, the rising edge measured in
//     bins from the series start): a = Re(D*conj(W))/|W|^2, signed;
//   - phase unknown: theta maximises the projection Re(D*conj(W))/|W| over a
//     grid (32 points per bin, then golden-section refinement); the result
//     is a magnitude (a >= 0), like the paper's equation 5.
// gradient = a / delta_l_ns. The paper's closed form is kept as eq5_value for
// reference; the tests show it is off by up to 1 - cos(pi/2n) at random phase
// while `value` is not.
//
// Confidence interval. Noise: the complex coefficient at f_d is signal plus
// circular complex Gaussian noise Z with E|Z|^2 = sigma^2. sigma^2 is
// estimated as the mean of |D_k|^2 over the `noise_bins` bins nearest to k_d
// (excluding DC, Nyquist, k_d and every odd harmonic of k_d and its aliases,
// where the square wave has energy), i.e. assuming a locally flat noise
// spectrum; nu = 2*noise_bins degrees of freedom. The fitted amplitude's
// noise is the component of Z along W: standard error sigma/(sqrt(2)*|W|).
//   - phase known: value +- t_{nu}((1+c)/2) * se (exact for Gaussian noise);
//   - phase unknown and the signal detected (|D| outside the disc of radius
//     r around 0 that holds |Z| with probability c, r^2/sigma^2 from
//     F(2, nu): r^2 = sigma^2 * (nu/2) * ((1-c)^{-2/nu} - 1)): the same
//     t interval with the low end clamped at 0 — the normal approximation of
//     the magnitude, good at high SNR;
//   - phase unknown and not detected: [0, (|D| + r) / (min|W| * delta_l)]
//     (|Z| <= r, probability c, implies |S| <= |D| + r whatever the phase);
//     with it the procedure covers a gradient of 0 with probability >= c.
// The phase estimate's own error is ignored (second order at high SNR).
// Measured coverage (200-300 seeded synthetic runs, tests/unit/analysis/
// gradient_test.cc): ~94-95% for g = 0, 0.5, 1 with phase known or not. For
// large g the interval is conservative (99% at g = 3): the bin-edge noise of
// a large wave (how many requests of an edge bin fell in the high half) is
// white overall, so it raises sigma, but at f_d it lies along the phase
// direction, orthogonal to the amplitude being estimated.
//
// Time-domain cross-check: with theta (given or estimated), the mean of the
// bins lying wholly in high half-cycles minus the mean of the bins wholly in
// low half-cycles, divided by delta_l_ns. NaN when a half has no whole bin.
#include <complex>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "nabla/analysis/binning.hh"

namespace nabla::analysis {

struct GradientOptions {
  double confidence = 0.95;
  std::size_t noise_bins = 16;       // 2W neighbouring bins for the noise level
  std::optional<double> phase_bins;  // rising edge of the wave, bins from start
  // Bins the noise estimate must not use besides k_d's own harmonics: where
  // other links' waves have energy in a simultaneous phase
  // (FrequencyPlan::occupied).
  std::vector<std::size_t> exclude_bins;
};

struct GradientEstimate {
  double value = 0;  // d(rt)/d(l), dimensionless
  double ci_low = 0;
  double ci_high = 0;
  double standard_error = 0;  // of value (normal approximation)
  double eq5_value = 0;       // the paper's equation 5, for reference
  double time_domain_value = 0;
  double snr = 0;         // |D(f_d)| / sigma
  bool detected = false;  // signal distinguishable from 0 at `confidence`
  bool phase_given = false;
  double phase_bins = 0;  // the phase used (given or estimated), in [0, P)
  int k_d = 0;
  std::size_t bins = 0;              // N
  double period_bins = 0;            // 2n = N / k_d
  std::size_t noise_bins = 0;        // bins actually used for sigma
  double noise_sigma = 0;            // sqrt(E|Z|^2) estimate, ns
  std::complex<double> coefficient;  // D = FFT^d(f_d) - FFT^0(f_d), ns
};

// baseline_spectrum: empty (FFT^0 = 0) or N/2+1 bins in rfft's convention
// (e.g. TrainingResult::fft0_mean). Throws std::invalid_argument when N is not
// a power of two >= 8, k_d < 1, N/k_d < 4, delta_l_ns <= 0, the baseline has
// the wrong size, confidence is outside (0, 1) or fewer than 2 noise bins
// exist.
GradientEstimate estimate_gradient_with_baseline_spectrum(
    std::span<const double> series, std::span<const std::complex<double>> baseline_spectrum,
    int k_d, double delta_l_ns, const GradientOptions& options = {});

// Baseline given as an unperturbed series of the same N bins (its FFT is the
// FFT^0), or none.
GradientEstimate estimate_gradient(std::span<const double> series,
                                   std::optional<std::span<const double>> baseline, int k_d,
                                   double delta_l_ns, const GradientOptions& options = {});
GradientEstimate estimate_gradient(std::span<const double> series,
                                   std::optional<std::span<const double>> baseline, int k_d,
                                   double delta_l_ns, double confidence);

// The injection frequency index for a square wave of period period_ns over N
// bins of bin_width_ns: k_d = N * bin_width_ns / period_ns, which must be a
// whole number (exact integer arithmetic) with N / k_d >= 4; otherwise
// std::invalid_argument naming the period. (`nabla analyze gradient --bins 128
// --bin-width 50ms --period 1.6s` gives k_d = 4.)
int k_d_for_period(std::size_t bins, std::int64_t bin_width_ns, std::int64_t period_ns);

// The `nabla analyze gradient` path: bin `records` per type into N bins of
// bin_width_ns starting at the earliest t_ns, k_d from period_ns
// (k_d_for_period), and estimate each type's gradient with the phase
// estimated. The baseline records, when given, are binned the same way from
// their own earliest t_ns and a type's baseline series is its FFT^0 (types
// absent from the baseline get FFT^0 = 0). Throws std::invalid_argument for
// empty records or the errors of k_d_for_period / estimate_gradient.
struct TypedGradient {
  std::int32_t type = 0;
  GradientEstimate estimate;
  std::size_t records = 0;      // records of this type inside the window
  std::size_t filled_bins = 0;  // empty bins that were interpolated
  bool reliable = true;         // BinnedSeries::reliable (and the baseline's)
  bool has_baseline = false;
};

std::vector<TypedGradient> gradients_by_type(
    std::span<const LatencyRecord> records,
    std::optional<std::span<const LatencyRecord>> baseline_records, std::int64_t bin_width_ns,
    std::size_t bins, std::int64_t period_ns, double delta_l_ns,
    const GradientOptions& options = {});

}  // namespace nabla::analysis
