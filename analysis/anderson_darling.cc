#include "nabla/analysis/anderson_darling.hh"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

namespace nabla::analysis {
namespace {

constexpr std::array<double, 5> kSignificancePercent = {15.0, 10.0, 5.0, 2.5, 1.0};
// Stephens (1974), exponential with estimated scale, asymptotic points.
constexpr std::array<double, 5> kAsymptoticCritical = {0.922, 1.078, 1.341, 1.606, 1.957};

// numpy.around(v, 3): scale, round half to even, scale back.
double round3(double v) {
  return std::nearbyint(v * 1000.0) / 1000.0;
}

}  // namespace

bool AndersonDarlingResult::rejects_at(double level_percent) const {
  for (std::size_t i = 0; i < significance_levels.size(); ++i) {
    if (significance_levels[i] == level_percent) return statistic > critical_values[i];
  }
  throw std::invalid_argument(
      "AndersonDarlingResult::rejects_at: level must be one of 15, 10, "
      "5, 2.5, 1 (percent), got " +
      std::to_string(level_percent));
}

AndersonDarlingResult anderson_darling_exponential(std::span<const double> x) {
  const std::size_t n = x.size();
  if (n < kAndersonDarlingMinSamples) {
    throw std::invalid_argument("anderson_darling_exponential: need at least " +
                                std::to_string(kAndersonDarlingMinSamples) + " values, got " +
                                std::to_string(n));
  }
  std::vector<double> y(x.begin(), x.end());
  long double sum = 0.0L;
  for (double v : y) {
    if (!(v >= 0.0) || std::isinf(v)) {
      throw std::invalid_argument(
          "anderson_darling_exponential: values must be finite and >= 0 (exponential support), "
          "got " +
          std::to_string(v));
    }
    sum += v;
  }
  if (sum == 0.0L) {
    throw std::invalid_argument("anderson_darling_exponential: all values are 0, no scale");
  }
  std::sort(y.begin(), y.end());
  const double scale = static_cast<double>(sum / static_cast<long double>(n));

  // scipy: logcdf = log(-expm1(-w)), logsf = -w; the i-th weight pairs the
  // i-th smallest cdf with the i-th largest sf.
  const double nd = static_cast<double>(n);
  long double acc = 0.0L;
  for (std::size_t i = 0; i < n; ++i) {
    const double w_low = y[i] / scale;
    const double w_high = y[n - 1 - i] / scale;
    const double log_cdf = std::log(-std::expm1(-w_low));
    const double log_sf = -w_high;
    acc += (2.0 * static_cast<double>(i + 1) - 1.0) / nd *
           (static_cast<long double>(log_cdf) + log_sf);
  }
  AndersonDarlingResult result;
  result.statistic = static_cast<double>(-static_cast<long double>(nd) - acc);
  result.significance_levels = kSignificancePercent;
  for (std::size_t i = 0; i < kAsymptoticCritical.size(); ++i) {
    result.critical_values[i] = round3(kAsymptoticCritical[i] / (1.0 + 0.6 / nd));
  }
  return result;
}

}  // namespace nabla::analysis
