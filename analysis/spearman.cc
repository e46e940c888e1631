#include "nabla/analysis/spearman.hh"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>

#include "nabla/analysis/distributions.hh"

namespace nabla::analysis {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

void require_no_nan(std::span<const double> x, const char* what) {
  for (double v : x) {
    if (std::isnan(v)) throw std::invalid_argument(std::string(what) + ": input contains NaN");
  }
}

void require_pairs(std::size_t pairs, const char* what) {
  if (pairs < kSpearmanMinPairs) {
    throw std::invalid_argument(std::string(what) + ": need at least " +
                                std::to_string(kSpearmanMinPairs) + " pairs, got " +
                                std::to_string(pairs));
  }
}

// Indices of x in increasing order of value, ties by index (so the order is
// reproducible; tied values get averaged ranks anyway). Sorting (value, index)
// pairs keeps the comparisons in contiguous memory, which matters at 1M values.
std::vector<std::size_t> sorted_order(std::span<const double> x) {
  std::vector<std::pair<double, std::size_t>> keyed(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) keyed[i] = {x[i], i};
  std::sort(keyed.begin(), keyed.end());
  std::vector<std::size_t> order(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) order[i] = keyed[i].second;
  return order;
}

// 1-based average ranks (scipy.stats.rankdata, method='average') of the values
// x[begin .. end), read off the sort order of the whole of x by skipping the
// indices outside the window. Returns an empty vector when the window is
// constant.
std::vector<double> window_ranks(std::span<const double> x, std::span<const std::size_t> order,
                                 std::size_t begin, std::size_t end) {
  std::vector<double> ranks(end - begin);
  std::vector<std::size_t> group;  // window indices sharing one value
  std::size_t assigned = 0;        // ranks handed out so far
  auto close_group = [&] {
    // Ranks assigned+1 .. assigned+size average to this (a half-integer, exact).
    const double average = static_cast<double>(2 * assigned + group.size() + 1) / 2.0;
    for (std::size_t i : group) ranks[i - begin] = average;
    assigned += group.size();
    group.clear();
  };
  for (std::size_t i : order) {
    if (i < begin || i >= end) continue;
    if (!group.empty() && x[i] != x[group.front()]) close_group();
    group.push_back(i);
  }
  const bool constant = group.size() == ranks.size();
  close_group();
  if (constant) ranks.clear();
  return ranks;
}

SpearmanResult correlate_ranks(const std::vector<double>& ra, const std::vector<double>& rb,
                               std::size_t pairs) {
  SpearmanResult result;
  result.n = static_cast<std::int64_t>(pairs);
  if (ra.empty() || rb.empty()) {  // a constant side: undefined, as scipy
    result.rho = kNaN;
    result.p_value = kNaN;
    return result;
  }
  // Pearson correlation of the ranks; their mean is (n + 1) / 2 exactly.
  const long double mid = (static_cast<long double>(pairs) + 1.0L) / 2.0L;
  long double saa = 0.0L;
  long double sbb = 0.0L;
  long double sab = 0.0L;
  for (std::size_t i = 0; i < pairs; ++i) {
    const long double da = ra[i] - mid;
    const long double db = rb[i] - mid;
    saa += da * da;
    sbb += db * db;
    sab += da * db;
  }
  const double rho =
      std::clamp(static_cast<double>(sab / std::sqrt(saa) / std::sqrt(sbb)), -1.0, 1.0);
  result.rho = rho;
  const double dof = static_cast<double>(pairs) - 2.0;
  if (std::fabs(rho) == 1.0) {
    result.p_value = 0.0;
    return result;
  }
  const double t = rho * std::sqrt(std::max(0.0, dof / ((rho + 1.0) * (1.0 - rho))));
  result.p_value = 2.0 * student_t_cdf(-std::fabs(t), dof);
  return result;
}

SpearmanResult autocorrelation_from_order(std::span<const double> x,
                                          std::span<const std::size_t> order, std::size_t lag) {
  const std::size_t pairs = x.size() - lag;
  return correlate_ranks(window_ranks(x, order, 0, pairs), window_ranks(x, order, lag, x.size()),
                         pairs);
}

}  // namespace

SpearmanResult spearman(std::span<const double> a, std::span<const double> b) {
  if (a.size() != b.size()) {
    throw std::invalid_argument("spearman: a and b differ in length (" + std::to_string(a.size()) +
                                " vs " + std::to_string(b.size()) + ")");
  }
  require_pairs(a.size(), "spearman");
  require_no_nan(a, "spearman");
  require_no_nan(b, "spearman");
  const auto order_a = sorted_order(a);
  const auto order_b = sorted_order(b);
  return correlate_ranks(window_ranks(a, order_a, 0, a.size()),
                         window_ranks(b, order_b, 0, b.size()), a.size());
}

SpearmanResult spearman_autocorrelation(std::span<const double> x, std::size_t lag) {
  if (lag == 0) throw std::invalid_argument("spearman_autocorrelation: lag must be >= 1");
  require_pairs(x.size() > lag ? x.size() - lag : 0, "spearman_autocorrelation");
  require_no_nan(x, "spearman_autocorrelation");
  const auto order = sorted_order(x);
  return autocorrelation_from_order(x, order, lag);
}

SpearmanLagScan first_independent_lag(std::span<const double> x, double alpha,
                                      std::size_t max_lag) {
  if (!(alpha > 0.0 && alpha < 1.0)) {
    throw std::invalid_argument("first_independent_lag: alpha must be in (0, 1), got " +
                                std::to_string(alpha));
  }
  if (max_lag == 0) throw std::invalid_argument("first_independent_lag: max_lag must be >= 1");
  require_pairs(x.size() > 1 ? x.size() - 1 : 0, "first_independent_lag");
  require_no_nan(x, "first_independent_lag");
  const auto order = sorted_order(x);
  SpearmanLagScan scan;
  for (std::size_t lag = 1; lag <= max_lag && x.size() - lag >= kSpearmanMinPairs; lag *= 2) {
    const SpearmanResult r = autocorrelation_from_order(x, order, lag);
    scan.steps.push_back({lag, r});
    if (std::isnan(r.rho) || r.p_value >= alpha) {
      scan.independent_lag = lag;
      break;
    }
  }
  return scan;
}

}  // namespace nabla::analysis
