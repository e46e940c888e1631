#include "nabla/analysis/least_squares.hh"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace nabla::analysis {

double LeastSquaresFit::residual_variance() const {
  const std::size_t p = beta.size();
  return observations > p ? rss / static_cast<double>(observations - p) : 0.0;
}

double LeastSquaresFit::variance_of(const std::vector<double>& weights) const {
  double v = 0;
  for (std::size_t a = 0; a < weights.size() && a < beta.size(); ++a) {
    for (std::size_t b = 0; b < weights.size() && b < beta.size(); ++b) {
      v += weights[a] * xtx_inverse[a][b] * weights[b];
    }
  }
  return std::max(0.0, v * residual_variance());
}

bool invert_matrix(std::vector<std::vector<double>> a, std::vector<std::vector<double>>& inverse) {
  const std::size_t p = a.size();
  inverse.assign(p, std::vector<double>(p, 0.0));
  double scale = 0;
  for (std::size_t i = 0; i < p; ++i) {
    inverse[i][i] = 1.0;
    scale = std::max(scale, std::abs(a[i][i]));
  }
  for (std::size_t c = 0; c < p; ++c) {
    std::size_t pivot = c;
    for (std::size_t r = c + 1; r < p; ++r) {
      if (std::abs(a[r][c]) > std::abs(a[pivot][c])) pivot = r;
    }
    if (std::abs(a[pivot][c]) <= 1e-12 * scale) return false;
    std::swap(a[c], a[pivot]);
    std::swap(inverse[c], inverse[pivot]);
    const double d = a[c][c];
    for (std::size_t k = 0; k < p; ++k) {
      a[c][k] /= d;
      inverse[c][k] /= d;
    }
    for (std::size_t r = 0; r < p; ++r) {
      if (r == c || a[r][c] == 0) continue;
      const double f = a[r][c];
      for (std::size_t k = 0; k < p; ++k) {
        a[r][k] -= f * a[c][k];
        inverse[r][k] -= f * inverse[c][k];
      }
    }
  }
  return true;
}

std::optional<LeastSquaresFit> least_squares(const std::vector<std::vector<double>>& columns,
                                             const std::vector<double>& y) {
  const std::size_t p = columns.size(), n = y.size();
  if (p == 0) return std::nullopt;
  for (const auto& c : columns) {
    if (c.size() != n)
      throw std::invalid_argument("least_squares: a column's length differs from y's");
  }
  std::vector<std::vector<double>> xtx(p, std::vector<double>(p, 0.0));
  std::vector<double> xty(p, 0.0);
  for (std::size_t a = 0; a < p; ++a) {
    for (std::size_t i = 0; i < n; ++i) xty[a] += columns[a][i] * y[i];
    for (std::size_t b = a; b < p; ++b) {
      double s = 0;
      for (std::size_t i = 0; i < n; ++i) s += columns[a][i] * columns[b][i];
      xtx[a][b] = xtx[b][a] = s;
    }
  }
  LeastSquaresFit f;
  if (!invert_matrix(xtx, f.xtx_inverse)) return std::nullopt;
  f.beta.assign(p, 0.0);
  for (std::size_t a = 0; a < p; ++a) {
    for (std::size_t b = 0; b < p; ++b) f.beta[a] += f.xtx_inverse[a][b] * xty[b];
  }
  for (std::size_t i = 0; i < n; ++i) {
    double fit = 0;
    for (std::size_t a = 0; a < p; ++a) fit += f.beta[a] * columns[a][i];
    f.rss += (y[i] - fit) * (y[i] - fit);
  }
  f.observations = n;
  return f;
}

}  // namespace nabla::analysis
