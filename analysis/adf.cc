#include "nabla/analysis/adf.hh"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <stdexcept>
#include <string>
#include <vector>

#include "nabla/analysis/mackinnon.hh"

namespace nabla::analysis {
namespace {

// Rows accumulated in double before being added to the long double totals:
// short enough that the double partial sums stay accurate, long enough that
// the inner loop over lags runs vectorised.
constexpr std::int64_t kBlockRows = 512;

// A regression column whose residual variance, relative to its own variance,
// falls below this after the previous columns is treated as collinear.
constexpr long double kCollinear = 1e-13L;

[[noreturn]] void degenerate(const std::string& why) {
  throw std::invalid_argument("adf_test: " + why);
}

// Centred cross products (sums of products of deviations from the column
// means) of the ADF design on rows t = first..n-2, where d_t = x_{t+1} - x_t:
//   column 0       level x_t
//   column 1 + h   lagged difference d_{t-h}, h = 0..lags (h = 0 is the regressand)
class CrossProducts {
 public:
  CrossProducts(std::span<const double> x, std::span<const double> d,
                std::span<const double> d_reversed, int lags, std::int64_t first);

  std::int64_t rows() const { return rows_; }
  long double at(int a, int b) const { return m_[static_cast<std::size_t>(a * dim_ + b)]; }

 private:
  long double& cell(int a, int b) { return m_[static_cast<std::size_t>(a * dim_ + b)]; }

  int dim_;
  std::int64_t rows_;
  std::vector<long double> m_;
};

CrossProducts::CrossProducts(std::span<const double> x, std::span<const double> d,
                             std::span<const double> d_reversed, int lags, std::int64_t first)
    : dim_(lags + 2),
      rows_(static_cast<std::int64_t>(d.size()) - first),
      m_(static_cast<std::size_t>(dim_ * dim_), 0.0L) {
  const auto nd = static_cast<std::int64_t>(d.size());
  const std::int64_t last = nd - 1;
  const auto width = static_cast<std::size_t>(lags + 1);

  // Shift the level to its mean over the rows: the constant in the model
  // absorbs the shift, and the products no longer cancel on large offsets.
  long double level_sum = 0.0L;
  for (std::int64_t t = first; t <= last; ++t) level_sum += x[static_cast<std::size_t>(t)];
  const double shift = static_cast<double>(level_sum / rows_);

  // One pass over the rows: for each t, the products of d_t and of the
  // shifted level with every lag d_{t-h}. d_reversed makes d_{t-h}, h = 0..lags,
  // a contiguous forward run so the inner loop vectorises without reductions.
  std::vector<double> block_dd(width, 0.0);
  std::vector<double> block_xd(width, 0.0);
  std::vector<long double> dd(width, 0.0L);  // sum d_t d_{t-h}
  std::vector<long double> xd(width, 0.0L);  // sum (x_t - shift) d_{t-h}
  long double level_dev_sum = 0.0L;
  long double level_sq = 0.0L;
  std::int64_t in_block = 0;
  auto flush = [&] {
    for (std::size_t h = 0; h < width; ++h) {
      dd[h] += block_dd[h];
      xd[h] += block_xd[h];
      block_dd[h] = 0.0;
      block_xd[h] = 0.0;
    }
    in_block = 0;
  };
  for (std::int64_t t = first; t <= last; ++t) {
    const double dt = d[static_cast<std::size_t>(t)];
    const double xt = x[static_cast<std::size_t>(t)] - shift;
    const double* lagged = d_reversed.data() + (nd - 1 - t);
    double* out_dd = block_dd.data();
    double* out_xd = block_xd.data();
    for (std::size_t h = 0; h < width; ++h) {
      out_dd[h] += dt * lagged[h];
      out_xd[h] += xt * lagged[h];
    }
    level_dev_sum += xt;
    level_sq += static_cast<long double>(xt) * xt;
    if (++in_block == kBlockRows) flush();
  }
  flush();

  // Column sums of the lag columns: a window of d sliding back one step per lag.
  std::vector<long double> lag_sum(width, 0.0L);
  for (std::int64_t t = first; t <= last; ++t) lag_sum[0] += d[static_cast<std::size_t>(t)];
  for (int h = 1; h <= lags; ++h) {
    lag_sum[static_cast<std::size_t>(h)] = lag_sum[static_cast<std::size_t>(h - 1)] +
                                           d[static_cast<std::size_t>(first - h)] -
                                           d[static_cast<std::size_t>(last - h + 1)];
  }

  // Lag-lag products: entry (i, i + h) sums d_{t-i} d_{t-i-h} over the rows,
  // the same window as (0, h) moved back i steps, so each follows from the
  // previous one by adding the row entering and removing the row leaving.
  for (int h = 0; h <= lags; ++h) {
    long double g = dd[static_cast<std::size_t>(h)];
    cell(1, 1 + h) = g;
    for (int i = 0; i + h < lags; ++i) {
      const std::int64_t in = first - i - 1;
      const std::int64_t out = last - i;
      g += static_cast<long double>(d[static_cast<std::size_t>(in)]) *
               d[static_cast<std::size_t>(in - h)] -
           static_cast<long double>(d[static_cast<std::size_t>(out)]) *
               d[static_cast<std::size_t>(out - h)];
      cell(2 + i, 2 + i + h) = g;
    }
  }
  cell(0, 0) = level_sq;
  for (int h = 0; h <= lags; ++h) cell(0, 1 + h) = xd[static_cast<std::size_t>(h)];

  // Centre, then mirror the upper triangle.
  std::vector<long double> sums(static_cast<std::size_t>(dim_));
  sums[0] = level_dev_sum;
  for (int h = 0; h <= lags; ++h) sums[static_cast<std::size_t>(1 + h)] = lag_sum[h];
  const auto n = static_cast<long double>(rows_);
  for (int a = 0; a < dim_; ++a) {
    for (int b = a; b < dim_; ++b) {
      cell(a, b) -= sums[static_cast<std::size_t>(a)] * sums[static_cast<std::size_t>(b)] / n;
      cell(b, a) = cell(a, b);
    }
  }
}

// Least squares of column `y` on the leading columns of `order` (plus the
// intercept, absorbed by centring), for every leading block at once.
// Returns z = L^{-1} r with L the Cholesky factor of the correlation matrix of
// the regressors and r their correlations with y: the model with the first k
// regressors leaves the fraction 1 - (z_0^2 + ... + z_{k-1}^2) of y's centred
// sum of squares unexplained, and, when its last regressor is order[k-1], that
// coefficient's t-ratio is z_{k-1} / s with s the scaled residual std error.
std::vector<long double> nested_projection(const CrossProducts& m, std::span<const int> order,
                                           int y) {
  const std::size_t k = order.size();
  if (m.at(y, y) <= 0.0L)
    degenerate("the differences of the series are constant (constant series or straight line)");
  std::vector<long double> scale(k);
  for (std::size_t a = 0; a < k; ++a) {
    const long double v = m.at(order[a], order[a]);
    if (v <= 0.0L)
      degenerate(order[a] == 0 ? "the series is constant" : "a lag column is constant");
    scale[a] = 1.0L / std::sqrt(v);
  }
  const long double y_scale = 1.0L / std::sqrt(m.at(y, y));

  std::vector<long double> l(k * k, 0.0L);
  std::vector<long double> z(k, 0.0L);
  for (std::size_t j = 0; j < k; ++j) {
    for (std::size_t i = j; i < k; ++i) {
      long double s = m.at(order[i], order[j]) * scale[i] * scale[j];
      for (std::size_t p = 0; p < j; ++p) s -= l[i * k + p] * l[j * k + p];
      if (i == j) {
        if (s <= kCollinear) degenerate("the regressors are collinear (series too regular)");
        l[j * k + j] = std::sqrt(s);
      } else {
        l[i * k + j] = s / l[j * k + j];
      }
    }
    long double r = m.at(order[j], y) * scale[j] * y_scale;
    for (std::size_t p = 0; p < j; ++p) r -= l[j * k + p] * z[p];
    z[j] = r / l[j * k + j];
  }
  return z;
}

// statsmodels' OLS log-likelihood and AIC (parameters counted with the constant).
double aic(long double rss, std::int64_t nobs, int params) {
  const double n = static_cast<double>(nobs);
  const double half = n / 2.0;
  const double llf = -half * std::log(2.0 * std::numbers::pi) -
                     half * std::log(static_cast<double>(rss) / n) - half;
  return -2.0 * llf + 2.0 * params;
}

}  // namespace

int adf_default_max_lag(std::size_t n) {
  if (n < kAdfMinSamples) {
    throw std::invalid_argument("adf_test: need at least " + std::to_string(kAdfMinSamples) +
                                " values, got " + std::to_string(n));
  }
  // Schwert (1989) via Greene, capped so the regression keeps its degrees of
  // freedom: statsmodels' rule, n/2 - ntrend - 1 with ntrend = 1.
  const int schwert =
      static_cast<int>(std::ceil(12.0 * std::pow(static_cast<double>(n) / 100.0, 1.0 / 4.0)));
  return std::min(static_cast<int>(n / 2) - 2, schwert);
}

AdfResult adf_test(std::span<const double> x, std::optional<int> max_lag) {
  const std::size_t n = x.size();
  const int bound = adf_default_max_lag(n);  // validates n
  for (double v : x) {
    if (!std::isfinite(v)) throw std::invalid_argument("adf_test: x contains NaN or infinity");
  }
  const int upper = static_cast<int>(n / 2) - 2;
  if (max_lag && (*max_lag < 0 || *max_lag > upper)) {
    throw std::invalid_argument("adf_test: max_lag must be in [0, " + std::to_string(upper) +
                                "] for " + std::to_string(n) + " values, got " +
                                std::to_string(*max_lag));
  }
  const int lags = max_lag.value_or(bound);

  std::vector<double> d(n - 1);
  for (std::size_t s = 0; s + 1 < n; ++s) d[s] = x[s + 1] - x[s];
  const std::vector<double> d_reversed(d.rbegin(), d.rend());

  // Search: every lag order on the rows available at the largest one.
  // Regressors in the order level, d_{t-1}, ..., d_{t-lags}, so the model with
  // p lags is the leading block of p + 1 columns.
  AdfResult result;
  result.max_lag = lags;
  {
    const CrossProducts m(x, d, d_reversed, lags, lags);
    std::vector<int> order{0};
    for (int h = 1; h <= lags; ++h) order.push_back(1 + h);
    const std::vector<long double> z = nested_projection(m, order, 1);
    const long double tss = m.at(1, 1);
    long double explained = 0.0L;
    for (int p = 0; p <= lags; ++p) {
      explained += z[static_cast<std::size_t>(p)] * z[static_cast<std::size_t>(p)];
      const long double unexplained = 1.0L - explained;
      if (unexplained <= 0.0L) degenerate("the series is fitted exactly by its own lags");
      const double ic = aic(tss * unexplained, m.rows(), p + 2);
      if (p == 0 || ic < result.icbest) {
        result.icbest = ic;
        result.used_lag = p;
      }
    }
  }

  // Refit the chosen order on all of its rows, the level regressor last so its
  // t-ratio is the last entry of the projection.
  const int p = result.used_lag;
  const CrossProducts m(x, d, d_reversed, p, p);
  std::vector<int> order;
  for (int h = 1; h <= p; ++h) order.push_back(1 + h);
  order.push_back(0);
  const std::vector<long double> z = nested_projection(m, order, 1);
  long double explained = 0.0L;
  for (long double v : z) explained += v * v;
  const long double unexplained = 1.0L - explained;
  if (unexplained <= 0.0L) degenerate("the series is fitted exactly by its own lags");
  const std::int64_t df_resid = m.rows() - (p + 2);
  const long double s = std::sqrt(unexplained / static_cast<long double>(df_resid));
  result.statistic = static_cast<double>(z.back() / s);
  result.nobs = m.rows();
  result.p_value = mackinnon_p_value(result.statistic);
  result.critical_values = mackinnon_critical_values(result.nobs);
  return result;
}

}  // namespace nabla::analysis
