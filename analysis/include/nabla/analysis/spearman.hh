#pragma once
// Spearman rank correlation with the t-approximation p-value — numerically
// scipy 1.10 `scipy.stats.spearmanr(a, b)`: ties get average ranks, rho is the
// Pearson correlation of the ranks, t = rho·sqrt((n − 2) / ((1 + rho)(1 − rho)))
// and the two-sided p-value is 2·P(T_{n−2} < −|t|).
//
// lancet (§4.3) uses the lag-L autocorrelation of latency samples (in send
// order) to decide whether they are independent, and lowers the sampling rate
// to 1:L when they are not; first_independent_lag() does that scan.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace nabla::analysis {

struct SpearmanResult {
  double rho = 0.0;      // NaN when either side is constant (as scipy)
  double p_value = 0.0;  // two-sided; NaN when rho is NaN, 0 when |rho| == 1
  std::int64_t n = 0;    // number of pairs
};

// Fewest pairs accepted (n − 2 degrees of freedom must be >= 1).
inline constexpr std::size_t kSpearmanMinPairs = 3;

// Correlation of a[i] with b[i]. Throws std::invalid_argument when the sizes
// differ, there are fewer than kSpearmanMinPairs pairs, or a value is NaN.
SpearmanResult spearman(std::span<const double> a, std::span<const double> b);

// Correlation of x[0 .. n−lag) with x[lag .. n); lag >= 1. Same errors as
// spearman() (n − lag pairs).
SpearmanResult spearman_autocorrelation(std::span<const double> x, std::size_t lag);

struct SpearmanLagStep {
  std::size_t lag = 0;
  SpearmanResult result;
};

struct SpearmanLagScan {
  // First lag whose correlation is not significant (p >= alpha), if any.
  std::optional<std::size_t> independent_lag;
  std::vector<SpearmanLagStep> steps;  // every lag tried, in order
};

// Tries lags 1, 2, 4, 8, ... up to max_lag (and while at least
// kSpearmanMinPairs pairs remain) and stops at the first with p >= alpha.
// A constant series (rho NaN) counts as independent. The input is sorted only
// once for the whole scan. Throws std::invalid_argument when alpha is not in
// (0, 1), max_lag is 0, or x has NaN or fewer than kSpearmanMinPairs + 1 values.
SpearmanLagScan first_independent_lag(std::span<const double> x, double alpha, std::size_t max_lag);

}  // namespace nabla::analysis
