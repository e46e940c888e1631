#pragma once
// Anderson–Darling goodness-of-fit test for the exponential distribution with
// the scale estimated from the sample (location fixed at 0) — the statistic and
// critical values of scipy 1.10 `scipy.stats.anderson(x, dist='expon')`.
//
// With w_i = y_i / mean(x) for the sorted sample y and F the unit exponential
// CDF:  A² = −n − Σ_{i=1..n} (2i − 1)/n · [ln F(w_i) + ln(1 − F(w_{n+1−i}))].
// Critical values are Stephens' (1974) table for 15, 10, 5, 2.5, 1 %
// (0.922, 1.078, 1.341, 1.606, 1.957), divided by 1 + 0.6/n and rounded to three
// decimals, exactly as scipy does.
//
// lancet (§4.3) uses it on the inter-transmission gaps of an open-loop load
// generator to confirm Poisson arrivals.
#include <array>
#include <cstddef>
#include <span>

namespace nabla::analysis {

struct AndersonDarlingResult {
  double statistic = 0.0;  // A²; +inf when a value is exactly 0 (ln F(0) = −inf), as scipy
  std::array<double, 5> critical_values{};
  std::array<double, 5> significance_levels{};  // in percent: 15, 10, 5, 2.5, 1

  // True when A² exceeds the critical value of `level_percent`, which must be
  // one of significance_levels (std::invalid_argument otherwise).
  bool rejects_at(double level_percent) const;
};

// Smallest sample accepted; Stephens' small-sample correction is documented
// from n = 5 on.
inline constexpr std::size_t kAndersonDarlingMinSamples = 5;

// Throws std::invalid_argument for fewer than kAndersonDarlingMinSamples
// values, any negative, NaN or infinite value (outside the exponential's
// support), or an all-zero sample (no scale).
AndersonDarlingResult anderson_darling_exponential(std::span<const double> x);

}  // namespace nabla::analysis
