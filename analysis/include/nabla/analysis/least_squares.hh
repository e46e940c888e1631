#pragma once
// Ordinary least squares without an implicit intercept (pass a column of
// ones for one): y = X beta + e, solved through the normal equations with
// Gauss-Jordan elimination and partial pivoting. Small p only (tens of
// columns): the campaign's messages per transaction and its interaction
// check.
#include <cstddef>
#include <optional>
#include <vector>

namespace nabla::analysis {

struct LeastSquaresFit {
  std::vector<double> beta;                      // per column
  std::vector<std::vector<double>> xtx_inverse;  // (X'X)^-1
  double rss = 0;                                // residual sum of squares
  std::size_t observations = 0;                  // n
  // rss / (n - p); 0 when n <= p.
  double residual_variance() const;
  // Cov(beta) = residual_variance * (X'X)^-1, for a weights vector w:
  // Var(w' beta).
  double variance_of(const std::vector<double>& weights) const;
};

// `columns[c][i]`: column c at observation i; every column as long as y.
// nullopt when the columns are linearly dependent (a pivot below 1e-12 of
// the largest diagonal of X'X) or there are no columns.
std::optional<LeastSquaresFit> least_squares(const std::vector<std::vector<double>>& columns,
                                             const std::vector<double>& y);

// Inverts the symmetric matrix `a` in place of `inverse`; false when it is
// singular (a pivot below 1e-12 of the largest diagonal).
bool invert_matrix(std::vector<std::vector<double>> a, std::vector<std::vector<double>>& inverse);

}  // namespace nabla::analysis
