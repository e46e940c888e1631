#pragma once
// Descriptive statistics over spans of doubles.
//
// Latencies sit on large offsets (1e9 ns and up), so variance is computed by
// the corrected two-pass algorithm (batch) or Welford's update (streaming),
// never as mean(x^2) - mean^2, which cancels catastrophically there.
//
// Edge cases: every function over an empty span returns NaN; variance with
// n <= ddof returns NaN.
#include <cstddef>
#include <cstdint>
#include <span>

namespace nabla::analysis {

double mean(std::span<const double> x);

// Sample variance with `ddof` delta degrees of freedom (1 = unbiased, 0 =
// population), by the corrected two-pass algorithm.
double variance(std::span<const double> x, int ddof = 1);
double stddev(std::span<const double> x, int ddof = 1);

// Streaming mean/variance/min/max (Welford); two accumulators merge exactly as
// if every value had gone into one (Chan et al.), so per-thread statistics can
// be combined at the end.
class RunningStats {
 public:
  void add(double x);
  void merge(const RunningStats& other);

  std::int64_t count() const { return n_; }
  double mean() const;                  // NaN when empty
  double variance(int ddof = 1) const;  // NaN when count <= ddof
  double stddev(int ddof = 1) const;
  double min() const;  // NaN when empty
  double max() const;  // NaN when empty
  double sum() const { return mean_ * static_cast<double>(n_); }

 private:
  std::int64_t n_ = 0;
  double mean_ = 0.0;
  double m2_ = 0.0;  // sum of squared deviations from the running mean
  double min_ = 0.0;
  double max_ = 0.0;
};

}  // namespace nabla::analysis
