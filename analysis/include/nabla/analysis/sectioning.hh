#pragma once
// A percentile's confidence interval from a series that is dependent in
// time, by sectioning (Asmussen & Glynn, *Stochastic Simulation*, 2007,
// §IV.5; for quantiles, Nakayama, ACM TOMACS 24(4), 2014).
//
// The series, in send order, is cut into B consecutive batches of m samples
// each (m = floor(n / B); the last n − B·m samples fill no batch). Each
// batch's p-percentile q_b is taken as percentile.hh takes it; S is their
// standard deviation (divisor B − 1). The value is the whole series'
// percentile q (all n samples), and the interval
//
//     q ± t_{B−1, (1+γ)/2} · S / sqrt(B)
//
// holds at level γ when batches are long against the series' dependence, so
// that the q_b are nearly independent and nearly normal. Centring on q
// rather than on the batches' mean keeps the batches' small-sample bias of
// a tail quantile out of the interval (Nakayama). The caller decides how
// long "long" is; here a batch must hold at least `min_batch` samples and at
// least `min_tail_per_batch` samples beyond the percentile on its nearer
// side (m·min(p, 1 − p)), or there is no interval.
//
// Errors: p outside [0, 1], confidence outside (0, 1), batches < 2 or NaN
// in the data throw std::invalid_argument naming the argument.
#include <cstddef>
#include <optional>
#include <span>
#include <vector>

namespace nabla::analysis {

struct SectioningConfig {
  std::size_t batches = 20;
  std::size_t min_batch = 1;
  double min_tail_per_batch = 10;
};

struct SectionedPercentile {
  double value = 0;  // the whole series' percentile
  double low = 0;
  double high = 0;
  std::size_t samples = 0;           // n
  std::size_t batches = 0;           // B
  std::size_t batch_size = 0;        // m
  double batch_sd = 0;               // S
  std::vector<double> batch_values;  // q_b in send order
};

// Fewest samples a series needs for an interval of percentile p (fraction).
std::size_t min_series_for_sectioning(double p, const SectioningConfig& config);

std::optional<SectionedPercentile> sectioned_percentile(std::span<const double> series, double p,
                                                        double confidence,
                                                        const SectioningConfig& config);

}  // namespace nabla::analysis
