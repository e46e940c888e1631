#include "nabla/analysis/descriptive.hh"

#include <algorithm>
#include <cmath>
#include <limits>

namespace nabla::analysis {
namespace {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
}  // namespace

double mean(std::span<const double> x) {
  if (x.empty()) return kNaN;
  // Long double accumulation keeps the sum exact for typical latency series
  // (n up to ~1e9 values of ~1e10 ns) on x86-64.
  long double sum = 0.0L;
  for (double v : x) sum += v;
  return static_cast<double>(sum / static_cast<long double>(x.size()));
}

double variance(std::span<const double> x, int ddof) {
  const auto n = static_cast<std::int64_t>(x.size());
  if (n == 0 || n <= ddof) return kNaN;
  const double m = mean(x);
  // Corrected two-pass: the second term removes the rounding error left in m.
  long double ss = 0.0L;
  long double s = 0.0L;
  for (double v : x) {
    const long double d = static_cast<long double>(v) - m;
    ss += d * d;
    s += d;
  }
  const long double corrected = ss - s * s / static_cast<long double>(n);
  return static_cast<double>(std::max(0.0L, corrected) / static_cast<long double>(n - ddof));
}

double stddev(std::span<const double> x, int ddof) {
  return std::sqrt(variance(x, ddof));
}

void RunningStats::add(double x) {
  if (n_ == 0) {
    min_ = max_ = x;
  } else {
    min_ = std::min(min_, x);
    max_ = std::max(max_, x);
  }
  ++n_;
  const double delta = x - mean_;
  mean_ += delta / static_cast<double>(n_);
  m2_ += delta * (x - mean_);
}

void RunningStats::merge(const RunningStats& other) {
  if (other.n_ == 0) return;
  if (n_ == 0) {
    *this = other;
    return;
  }
  const double na = static_cast<double>(n_);
  const double nb = static_cast<double>(other.n_);
  const double n = na + nb;
  const double delta = other.mean_ - mean_;
  mean_ += delta * nb / n;
  m2_ += other.m2_ + delta * delta * na * nb / n;
  n_ += other.n_;
  min_ = std::min(min_, other.min_);
  max_ = std::max(max_, other.max_);
}

double RunningStats::mean() const {
  return n_ == 0 ? kNaN : mean_;
}

double RunningStats::variance(int ddof) const {
  if (n_ == 0 || n_ <= ddof) return kNaN;
  return m2_ / static_cast<double>(n_ - ddof);
}

double RunningStats::stddev(int ddof) const {
  return std::sqrt(variance(ddof));
}
double RunningStats::min() const {
  return n_ == 0 ? kNaN : min_;
}
double RunningStats::max() const {
  return n_ == 0 ? kNaN : max_;
}

}  // namespace nabla::analysis
