#include "nabla/analysis/percentile.hh"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "nabla/analysis/distributions.hh"

namespace nabla::analysis {
namespace {

void validate(std::size_t n, double p) {
  if (n == 0) throw std::invalid_argument("percentile: data is empty");
  if (!(p >= 0.0 && p <= 1.0)) throw std::invalid_argument("percentile: p must be in [0, 1]");
}

void validate_confidence(double confidence) {
  if (!(confidence > 0.0 && confidence < 1.0)) {
    throw std::invalid_argument("percentile: confidence must be in (0, 1)");
  }
}

// n*p with the product's rounding error removed when it lands a hair above an
// integer (100 * 0.07 = 7.000000000000001).
double np_of(std::size_t n, double p) {
  const double np = static_cast<double>(n) * p;
  const double nearest = std::round(np);
  return std::abs(np - nearest) <= 1e-12 * std::max(1.0, np) ? nearest : np;
}

void reject_nan(const std::vector<double>& v) {
  for (double x : v) {
    if (std::isnan(x)) throw std::invalid_argument("percentile: data contains NaN");
  }
}

}  // namespace

std::size_t percentile_rank(std::size_t n, double p) {
  validate(n, p);
  const double r = std::ceil(np_of(n, p));
  return std::clamp(static_cast<std::size_t>(std::max(r, 1.0)), std::size_t{1}, n);
}

std::optional<CiRanks> percentile_ci_ranks(std::size_t n, double p, double confidence) {
  validate(n, p);
  validate_confidence(confidence);
  const double eta = normal_quantile((1.0 + confidence) / 2.0);
  const double np = np_of(n, p);
  const double spread = eta * std::sqrt(np * (1.0 - p));
  const double j = std::floor(np - spread);
  const double k = std::ceil(np + spread) + 1.0;
  if (j < 1.0 || k > static_cast<double>(n)) return std::nullopt;
  return CiRanks{static_cast<std::size_t>(j), static_cast<std::size_t>(k)};
}

double percentile_sorted(std::span<const double> sorted, double p) {
  return sorted[percentile_rank(sorted.size(), p) - 1];
}

std::optional<PercentileCi> percentile_ci_sorted(std::span<const double> sorted, double p,
                                                 double confidence) {
  const auto ranks = percentile_ci_ranks(sorted.size(), p, confidence);
  if (!ranks) return std::nullopt;
  return PercentileCi{sorted[ranks->j - 1], sorted[ranks->k - 1], ranks->j, ranks->k};
}

PercentileEstimate percentile(std::span<const double> data, double p, double confidence) {
  const std::size_t r = percentile_rank(data.size(), p);
  const auto ranks = percentile_ci_ranks(data.size(), p, confidence);
  std::vector<double> v(data.begin(), data.end());
  reject_nan(v);
  const auto at = [&v](std::size_t rank) {
    return v.begin() + static_cast<std::ptrdiff_t>(rank - 1);
  };
  std::nth_element(v.begin(), at(r), v.end());
  PercentileEstimate out{p, *at(r), std::nullopt};
  if (ranks) {
    // j <= r < k, so each rank is selected within the part nth_element left
    // on its side of r.
    std::nth_element(v.begin(), at(ranks->j), at(r));
    std::nth_element(at(r) + 1, at(ranks->k), v.end());
    out.ci = PercentileCi{*at(ranks->j), *at(ranks->k), ranks->j, ranks->k};
  }
  return out;
}

std::vector<PercentileEstimate> percentiles(std::span<const double> data,
                                            std::span<const double> ps, double confidence) {
  validate_confidence(confidence);
  std::vector<double> sorted(data.begin(), data.end());
  reject_nan(sorted);
  std::sort(sorted.begin(), sorted.end());
  std::vector<PercentileEstimate> out;
  out.reserve(ps.size());
  for (double p : ps) {
    out.push_back({p, percentile_sorted(sorted, p), percentile_ci_sorted(sorted, p, confidence)});
  }
  return out;
}

}  // namespace nabla::analysis
