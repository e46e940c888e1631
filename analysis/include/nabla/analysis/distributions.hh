#pragma once
// Distribution functions used by the confidence intervals and hypothesis
// tests. Accuracy target: agreement with scipy.special (cephes) to ~1e-12
// relative over the ranges the tests use; the unit tests pin literal values
// produced by scipy 1.10.
//
// Domain errors (p outside (0,1), df <= 0, x outside [0,1], a or b <= 0)
// throw std::invalid_argument naming the argument.
namespace nabla::analysis {

// Standard normal distribution.
double normal_pdf(double z);
double normal_cdf(double z);  // P(Z <= z)
double normal_sf(double z);   // P(Z > z), accurate in the upper tail
// Inverse of normal_cdf for p in (0, 1): log-space Newton iteration on the
// erfc-based CDF, accurate to a few ulps across (1e-300, 1 - 1e-16).
double normal_quantile(double p);

// Regularised incomplete beta function I_x(a, b), by Lentz's continued
// fraction with the symmetry I_x(a,b) = 1 - I_{1-x}(b,a) for convergence.
double regularized_incomplete_beta(double a, double b, double x);

// Student's t distribution with `df` degrees of freedom (df > 0, real).
double student_t_cdf(double t, double df);
double student_t_sf(double t, double df);  // P(T > t)
double student_t_quantile(double p, double df);

}  // namespace nabla::analysis
