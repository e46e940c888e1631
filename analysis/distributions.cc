#include "nabla/analysis/distributions.hh"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <stdexcept>
#include <string>
#include <utility>

namespace nabla::analysis {
namespace {

void require(bool ok, const char* what) {
  if (!ok) throw std::invalid_argument(what);
}

// Continued fraction for I_x(a, b) (modified Lentz), valid and fast when
// x < (a + 1) / (a + b + 2).
double beta_continued_fraction(double a, double b, double x) {
  constexpr int kMaxIterations = 10000;
  constexpr double kEps = 1e-16;
  constexpr double kTiny = 1e-300;
  const double qab = a + b;
  const double qap = a + 1.0;
  const double qam = a - 1.0;
  double c = 1.0;
  double d = 1.0 - qab * x / qap;
  if (std::fabs(d) < kTiny) d = kTiny;
  d = 1.0 / d;
  double h = d;
  for (int m = 1; m <= kMaxIterations; ++m) {
    const double m2 = 2.0 * m;
    double aa = m * (b - m) * x / ((qam + m2) * (a + m2));
    d = 1.0 + aa * d;
    if (std::fabs(d) < kTiny) d = kTiny;
    c = 1.0 + aa / c;
    if (std::fabs(c) < kTiny) c = kTiny;
    d = 1.0 / d;
    h *= d * c;
    aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
    d = 1.0 + aa * d;
    if (std::fabs(d) < kTiny) d = kTiny;
    c = 1.0 + aa / c;
    if (std::fabs(c) < kTiny) c = kTiny;
    d = 1.0 / d;
    const double del = d * c;
    h *= del;
    if (std::fabs(del - 1.0) < kEps) break;
  }
  return h;
}

// Stirling-series remainder of lgamma: lgamma(x) = (x-1/2) ln x - x +
// ln(2 pi)/2 + stirling_correction(x), truncation error < 3e-14 for x >= 10.
double stirling_correction(double x) {
  const double r = 1.0 / x;
  const double r2 = r * r;
  return r * (1.0 / 12 - r2 * (1.0 / 360 - r2 * (1.0 / 1260 - r2 * (1.0 / 1680 - r2 / 1188))));
}

// ln B(a, b) without the cancellation of lgamma(a) + lgamma(b) - lgamma(a+b)
// when a or b is large (lgamma values ~1e6 would leave ~1e-10 of error).
double log_beta(double a, double b) {
  if (a < b) std::swap(a, b);  // a >= b
  constexpr double kLarge = 10.0;
  const double s = a + b;
  if (b >= kLarge) {
    return 0.5 * std::log(2.0 * std::numbers::pi) + (a - 0.5) * -std::log1p(b / a) +
           (b - 0.5) * std::log(b / s) - 0.5 * std::log(s) + stirling_correction(a) +
           stirling_correction(b) - stirling_correction(s);
  }
  if (a >= kLarge) {
    // lgamma(a) - lgamma(a + b) by the difference of Stirling series.
    const double diff = (a - 0.5) * -std::log1p(b / a) - b * std::log(s) + b +
                        stirling_correction(a) - stirling_correction(s);
    return std::lgamma(b) + diff;
  }
  return std::lgamma(a) + std::lgamma(b) - std::lgamma(s);
}

// x^a (1-x)^b / (a B(a,b)), from ln x and ln(1-x) so that callers who know
// them more accurately than log(x) (x near 1) can pass them.
double beta_prefactor(double a, double b, double log_x, double log1m_x) {
  return std::exp(a * log_x + b * log1m_x - log_beta(a, b));
}

// I_x(a, b) given x, 1 - x and their logarithms, each computed by the caller
// as accurately as it can.
double incomplete_beta(double a, double b, double x, double one_minus_x, double log_x,
                       double log1m_x) {
  if (x < (a + 1.0) / (a + b + 2.0)) {
    return beta_prefactor(a, b, log_x, log1m_x) * beta_continued_fraction(a, b, x) / a;
  }
  return 1.0 -
         beta_prefactor(b, a, log1m_x, log_x) * beta_continued_fraction(b, a, one_minus_x) / b;
}

// Upper tail of Student's t for t >= 0: P(T > t) = I_x(df/2, 1/2) / 2 with
// x = df / (df + t^2); logs by log1p so that large df keeps full precision.
double t_upper_tail(double t, double df) {
  const double t2 = t * t;
  const double x = df / (df + t2);
  const double one_minus_x = t2 / (df + t2);
  const double log_x = -std::log1p(t2 / df);
  const double log1m_x = t2 == 0.0 ? -INFINITY : std::log(one_minus_x);
  if (t2 == 0.0) return 0.5;
  return 0.5 * incomplete_beta(0.5 * df, 0.5, x, one_minus_x, log_x, log1m_x);
}

}  // namespace

double normal_pdf(double z) {
  return std::exp(-0.5 * z * z) / std::sqrt(2.0 * std::numbers::pi);
}

double normal_cdf(double z) {
  return 0.5 * std::erfc(-z / std::numbers::sqrt2);
}

double normal_sf(double z) {
  return 0.5 * std::erfc(z / std::numbers::sqrt2);
}

double normal_quantile(double p) {
  require(p > 0.0 && p < 1.0, "normal_quantile: p must be in (0, 1)");
  if (p == 0.5) return 0.0;
  // Solve in the lower tail and mirror: log Phi(x) is concave, so Newton on
  // g(x) = log Phi(x) - log p converges monotonically from the start below.
  const bool upper = p > 0.5;
  const double q = upper ? 1.0 - p : p;
  const double log_q = std::log(q);
  double x = -std::sqrt(-2.0 * log_q);  // at or below the root
  for (int i = 0; i < 100; ++i) {
    const double cdf = normal_cdf(x);
    const double step = (std::log(cdf) - log_q) * cdf / normal_pdf(x);
    x -= step;
    if (std::fabs(step) <= 1e-15 * std::max(1.0, std::fabs(x))) break;
  }
  return upper ? -x : x;
}

double regularized_incomplete_beta(double a, double b, double x) {
  require(a > 0.0, "regularized_incomplete_beta: a must be > 0");
  require(b > 0.0, "regularized_incomplete_beta: b must be > 0");
  require(x >= 0.0 && x <= 1.0, "regularized_incomplete_beta: x must be in [0, 1]");
  if (x == 0.0) return 0.0;
  if (x == 1.0) return 1.0;
  return incomplete_beta(a, b, x, 1.0 - x, std::log(x), std::log1p(-x));
}

double student_t_sf(double t, double df) {
  require(df > 0.0, "student_t: df must be > 0");
  if (std::isinf(t)) return t > 0 ? 0.0 : 1.0;
  const double tail = t_upper_tail(std::fabs(t), df);
  return t > 0 ? tail : 1.0 - tail;
}

double student_t_cdf(double t, double df) {
  require(df > 0.0, "student_t: df must be > 0");
  if (std::isinf(t)) return t > 0 ? 1.0 : 0.0;
  const double tail = t_upper_tail(std::fabs(t), df);
  return t > 0 ? 1.0 - tail : tail;
}

double student_t_quantile(double p, double df) {
  require(p > 0.0 && p < 1.0, "student_t_quantile: p must be in (0, 1)");
  require(df > 0.0, "student_t_quantile: df must be > 0");
  if (p == 0.5) return 0.0;
  const bool upper = p > 0.5;
  const double q = upper ? 1.0 - p : p;  // solve P(T > t) = q for t > 0
  // Bracket the root, then bisect on the tail probability (monotone in t).
  double lo = 0.0;
  double hi = std::max(1.0, -normal_quantile(q));
  while (student_t_sf(hi, df) > q) {
    lo = hi;
    hi *= 2.0;
    if (hi > 1e300) break;
  }
  for (int i = 0; i < 200 && hi - lo > 1e-15 * hi; ++i) {
    const double mid = 0.5 * (lo + hi);
    if (student_t_sf(mid, df) > q) {
      lo = mid;
    } else {
      hi = mid;
    }
  }
  const double t = 0.5 * (lo + hi);
  return upper ? t : -t;
}

}  // namespace nabla::analysis
