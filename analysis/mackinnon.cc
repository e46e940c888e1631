#include "nabla/analysis/mackinnon.hh"

#include <cmath>
#include <span>
#include <stdexcept>

#include "nabla/analysis/distributions.hh"

namespace nabla::analysis {
namespace {

// MacKinnon (1994), constant, N = 1. Above tau_max the p-value is 1, below
// tau_min it is 0; tau_star splits the small-p and large-p polynomials.
constexpr double kTauMax = 2.74;
constexpr double kTauMin = -18.83;
constexpr double kTauStar = -1.61;

// Polynomial coefficients in increasing powers of tau. They are stored as the
// published table entries times their published scaling, written as the same
// double product statsmodels forms (entry * scale), so the values agree to the
// last bit.
const std::array<double, 3> kSmallP = {2.1659 * 1.0, 1.4412 * 1.0, 3.8269 * 1e-2};
const std::array<double, 4> kLargeP = {1.7339 * 1.0, 9.3202 * 1e-1, -1.2745 * 1e-1, -1.0368 * 1e-2};

// MacKinnon (2010), constant, N = 1: c0 + c1/T + c2/T^2 + c3/T^3 for the 1 %,
// 5 % and 10 % levels.
constexpr double kCrit[3][4] = {
    {-3.43035, -6.5393, -16.786, -79.433},
    {-2.86154, -2.8903, -4.234, -40.040},
    {-2.56677, -1.5384, -2.809, 0.0},
};

// Horner's rule from the highest power down, as numpy.polyval evaluates it.
double polyval(std::span<const double> increasing, double x) {
  double y = 0.0;
  for (auto it = increasing.rbegin(); it != increasing.rend(); ++it) y = y * x + *it;
  return y;
}

}  // namespace

double mackinnon_p_value(double tau) {
  if (std::isnan(tau)) return tau;
  if (tau > kTauMax) return 1.0;
  if (tau < kTauMin) return 0.0;
  const double z = tau <= kTauStar ? polyval(kSmallP, tau) : polyval(kLargeP, tau);
  return normal_cdf(z);
}

std::array<double, 3> mackinnon_critical_values(std::int64_t nobs) {
  if (nobs < 0) throw std::invalid_argument("mackinnon_critical_values: nobs must be >= 0");
  std::array<double, 3> out{};
  for (int level = 0; level < 3; ++level) {
    out[level] =
        nobs == 0 ? kCrit[level][0] : polyval(kCrit[level], 1.0 / static_cast<double>(nobs));
  }
  return out;
}

}  // namespace nabla::analysis
