#pragma once
// Percentiles and their confidence intervals from order statistics (lancet,
// section 2.3, formulas 1-2).
//
// Estimator: the p-th percentile (p in [0, 1], a fraction: 0.99 for p99) of
// n values is the order statistic of 1-based rank r = ceil(n*p), clamped to
// [1, n] (the "inverted CDF" definition, numpy method="inverted_cdf"). n*p is
// taken with a relative tolerance of 1e-12 so that 100 * 0.07 counts as 7
// (numpy rounds that case up to rank 8).
//
// Confidence interval at level gamma: eta = Phi^-1((1 + gamma)/2),
//   j = floor(n*p - eta*sqrt(n*p*(1-p))),  k = ceil(n*p + eta*sqrt(n*p*(1-p))) + 1,
// 1-based ranks into the sorted sample; the interval is [x_(j), x_(k)]. For
// n = 10000, p = 0.99, gamma = 0.95 this gives j = 9880, k = 9921. When j < 1
// or k > n the sample is too small for that percentile at that level and
// there is NO interval (std::nullopt) — never a clamped one, which would claim
// a confidence it does not have.
//
// Errors: empty data, NaN in the data (unsorted entry points), p outside
// [0, 1] or confidence outside (0, 1) throw std::invalid_argument naming the
// argument.
#include <cstddef>
#include <optional>
#include <span>
#include <vector>

namespace nabla::analysis {

struct PercentileCi {
  double low = 0;
  double high = 0;
  std::size_t j = 0;  // 1-based rank of low
  std::size_t k = 0;  // 1-based rank of high
};

struct CiRanks {
  std::size_t j = 0;
  std::size_t k = 0;
};

struct PercentileEstimate {
  double p = 0;
  double value = 0;
  std::optional<PercentileCi> ci;
};

// ceil(n*p) clamped to [1, n]; n >= 1.
std::size_t percentile_rank(std::size_t n, double p);
// (j, k) of formulas 1-2, or nullopt when outside [1, n].
std::optional<CiRanks> percentile_ci_ranks(std::size_t n, double p, double confidence);

// On data already sorted ascending (not checked).
double percentile_sorted(std::span<const double> sorted, double p);
std::optional<PercentileCi> percentile_ci_sorted(std::span<const double> sorted, double p,
                                                 double confidence);

// On unsorted data: selection (std::nth_element) on a copy, O(n).
PercentileEstimate percentile(std::span<const double> data, double p, double confidence = 0.95);
// Several percentiles: sorts one copy, O(n log n).
std::vector<PercentileEstimate> percentiles(std::span<const double> data,
                                            std::span<const double> ps, double confidence = 0.95);

}  // namespace nabla::analysis
