#pragma once
// What-if prediction of a transaction's mean response time from link
// gradients (link-gradient paper, section 5.3):
//
//     rt2 = rt1 + sum_i dl_i * g_i,        dl_i = l_i(new) - l_i(now)
//
// Variance. The paper propagates rho(rt2) = rho(rt1) + sum_i rho(l_i) * g_i^2
// (rho = variance), treating the gradients as exact. A measured gradient has
// its own error (GradientEstimate::standard_error), and for a large latency
// change it dominates: moving a tier across a continent (dl = 30 ms) with
// g = 2 +- 0.1 adds +-3 ms that the paper's interval would not show. For
// independent dl_i and g_i the variance of the product is exactly
//     Var(dl*g) = rho(dl)*g^2 + dl^2*rho(g) + rho(dl)*rho(g),
// so we use
//     rho(rt2) = rho(rt1) + sum_i [rho(dl_i)*g_i^2 + dl_i^2*rho(g_i) + rho(dl_i)*rho(g_i)],
// which reduces to the paper's formula when every rho(g_i) = 0. The interval
// is normal: rt2 +- Phi^-1((1+c)/2) * sqrt(rho(rt2)).
//
// Units: ns and ns^2; gradients dimensionless. rt1_variance should be the
// variance of the *estimate* of rt1 (squared standard error of the mean) for a
// CI of the mean response time. Negative variances or a confidence outside
// (0, 1) throw std::invalid_argument.
#include <span>

#include "nabla/analysis/gradient.hh"

namespace nabla::analysis {

struct LinkChange {
  double delta_latency_ns = 0;        // dl_i = l_i(new) - l_i(now)
  double delta_latency_variance = 0;  // rho(dl_i), ns^2
  double gradient = 0;                // g_i
  double gradient_variance = 0;       // rho(g_i); 0 reproduces the paper
};

struct Prediction {
  double rt_ns = 0;
  double variance = 0;  // ns^2
  double stddev_ns = 0;
  double ci_low_ns = 0;
  double ci_high_ns = 0;
};

Prediction predict_response_time(double rt1_ns, double rt1_variance,
                                 std::span<const LinkChange> links, double confidence = 0.95);

// A LinkChange from a measured gradient: rho(g) = standard_error^2.
LinkChange link_change(const GradientEstimate& gradient, double delta_latency_ns,
                       double delta_latency_variance);

}  // namespace nabla::analysis
