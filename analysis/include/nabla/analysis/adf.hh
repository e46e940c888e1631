#pragma once
// Augmented Dickey–Fuller unit-root test with a constant, lag order chosen by
// AIC — numerically the same test as statsmodels 0.13
// `tsa.stattools.adfuller(x)` with its defaults (regression="c",
// autolag="AIC").
//
// The model for lag order p, with Δx_t = x_t − x_{t−1}:
//   Δx_t = c + γ·x_{t−1} + Σ_{i=1..p} φ_i·Δx_{t−i} + e_t
// and the statistic is the t-ratio of γ (H0: γ = 0, a unit root).
//
// Lag selection follows statsmodels exactly: maxlag = ⌈12·(n/100)^{1/4}⌉
// capped at n/2 − 2; every p in 0..maxlag is fitted on the SAME rows (those
// available at maxlag) and the smallest AIC = −2·llf + 2·(p + 2) wins (ties go
// to the smaller p); then the chosen p is refitted on all rows available to
// it, which gives the statistic, `nobs` and the critical values.
//
// Speed: the lancet tool switched its ADF off as too slow (statsmodels fits
// maxlag + 2 separate least-squares problems; 122 of them on 1M rows). Here
// the cross-product matrix of all lagged columns is built once in O(n·maxlag)
// — the lag columns are shifts of one series, so all but one row of it follow
// from the first by edge corrections — and every nested model is a leading
// block of one Cholesky factor. Accumulation is blocked double into long
// double on data shifted to its mean, and the solve runs on the correlation-
// scaled matrix in long double.
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

namespace nabla::analysis {

struct AdfResult {
  double statistic = 0.0;  // t-ratio of the level coefficient (tau)
  double p_value = 0.0;    // MacKinnon (1994) approximate p-value
  int used_lag = 0;        // lag order chosen by AIC
  int max_lag = 0;         // largest lag order searched
  std::int64_t nobs = 0;   // rows in the final regression: n − 1 − used_lag
  // MacKinnon (2010) critical values for `nobs` at 1 %, 5 %, 10 %.
  std::array<double, 3> critical_values{};
  double icbest = 0.0;  // AIC of the chosen model in the common-sample search

  // True when the unit root is rejected at `alpha` (e.g. 0.05) by p-value.
  bool stationary_at(double alpha) const { return p_value < alpha; }
};

// Smallest series adf_test accepts (statsmodels' limit: n/2 − 2 >= 0).
inline constexpr std::size_t kAdfMinSamples = 4;

// Throws std::invalid_argument when x has fewer than kAdfMinSamples values,
// contains NaN or infinity, when max_lag is negative or above n/2 − 2, or
// when the regression is degenerate (constant series, constant differences,
// exactly collinear lags) — cases where statsmodels returns NaN.
AdfResult adf_test(std::span<const double> x, std::optional<int> max_lag = std::nullopt);

// statsmodels' default lag bound for a series of n values (n >= kAdfMinSamples).
int adf_default_max_lag(std::size_t n);

}  // namespace nabla::analysis
