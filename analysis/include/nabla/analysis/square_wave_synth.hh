#pragma once
// The square wave as a binned response-time series sees it.
//
// The injector adds a delay A while the wave is high: time t (in bins, bin i
// covering [i, i+1)) is high when (t - phase_bins) mod period_bins lies in
// [0, period_bins/2) (duty 1/2, rising edge at phase_bins). A bin holds the
// mean of the requests that fell into it; with requests spread over the bin
// its expected value is A times the fraction of the bin that was high. That
// bin-averaged wave — not the point-sampled wave of the paper's equation 3 —
// is what the gradient estimator has to model (see gradient.hh).
#include <complex>
#include <cstddef>
#include <vector>

namespace nabla::analysis {

// amplitude x (fraction of bin i that is high), i = 0 .. bins-1.
// period_bins > 0; any real phase (reduced modulo the period).
std::vector<double> square_wave_bin_means(std::size_t bins, double period_bins, double phase_bins,
                                          double amplitude);

// DFT coefficient (paper equation 2 convention) at integer frequency k of the
// unit-amplitude bin-averaged wave over `bins` bins. With k = bins/period and
// an edge on a bin boundary (integer phase, integer half period n) its
// magnitude is the paper's k / sin(pi/2n); between boundaries it shrinks, to
// k*cos(pi/2n)/sin(pi/2n) at half a bin.
std::complex<double> square_wave_coefficient(std::size_t bins, std::size_t k, double period_bins,
                                             double phase_bins);

}  // namespace nabla::analysis

namespace nabla::analysis {

// min over the phase of |square_wave_coefficient(bins, k, period, phase)|:
// the smallest spectral response a unit wave can have at frequency k (the
// coefficient's magnitude is periodic in the phase with period one bin, and
// with period 1/k'' (k'' = k/gcd(bins, k)) when k*period == bins, so a grid
// over that span suffices). For integer half periods n it is
// k * cos(pi/2n) / sin(pi/2n), reached at half a bin.
double square_wave_min_coefficient_magnitude(std::size_t bins, std::size_t k, double period_bins);

}  // namespace nabla::analysis
