#pragma once
// Real-to-complex discrete Fourier transform through FFTW3.
//
// Convention (link-gradient paper, equation 2): unnormalised, negative
// exponent,
//
//     X_k = sum_{i=0}^{N-1} x_i * exp(-2*pi*j*i*k/N),   k = 0 .. N/2,
//
// i.e. the same numbers as numpy.fft.rfft. Only the N/2+1 non-redundant bins
// of a real input are returned (X_{N-k} = conj(X_k)).
//
// Thread safety: FFTW's planner is not thread-safe, so plan creation happens
// under one process-wide mutex; plans are cached per size for the life of the
// process. Execution uses fftw_execute_dft_r2c on per-call arrays allocated
// with fftw_malloc (same alignment as the planning arrays), which FFTW
// documents as safe to run concurrently with one plan. Plans are made with
// FFTW_ESTIMATE: deterministic (no timing-dependent plan choice, so results
// are bit-for-bit reproducible between runs) and cheap to create; the sizes
// nabla uses (N <= a few thousand bins) take microseconds either way.
#include <complex>
#include <cstddef>
#include <span>
#include <vector>

namespace nabla::analysis {

// N/2+1 complex bins of x (N = x.size()). Empty input gives an empty result;
// N = 1 gives {x_0}. Any N works (FFTW handles non-powers of two).
std::vector<std::complex<double>> rfft(std::span<const double> x);

// |X_k| for k = 0 .. N/2 (same size and convention as rfft).
std::vector<double> magnitude_spectrum(std::span<const double> x);

// Number of FFTW plans currently cached (one per distinct size used); for
// tests and diagnostics.
std::size_t fft_cached_plan_count();

}  // namespace nabla::analysis
