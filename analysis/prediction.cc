#include "nabla/analysis/prediction.hh"

#include <cmath>
#include <stdexcept>

#include "nabla/analysis/distributions.hh"

namespace nabla::analysis {

Prediction predict_response_time(double rt1_ns, double rt1_variance,
                                 std::span<const LinkChange> links, double confidence) {
  if (!(confidence > 0.0 && confidence < 1.0)) {
    throw std::invalid_argument("prediction: confidence must be in (0, 1)");
  }
  if (!(rt1_variance >= 0.0)) throw std::invalid_argument("prediction: rt1_variance must be >= 0");
  Prediction p;
  p.rt_ns = rt1_ns;
  p.variance = rt1_variance;
  for (const auto& l : links) {
    if (!(l.delta_latency_variance >= 0.0) || !(l.gradient_variance >= 0.0)) {
      throw std::invalid_argument("prediction: link variances must be >= 0");
    }
    p.rt_ns += l.delta_latency_ns * l.gradient;
    p.variance += l.delta_latency_variance * l.gradient * l.gradient +
                  l.delta_latency_ns * l.delta_latency_ns * l.gradient_variance +
                  l.delta_latency_variance * l.gradient_variance;
  }
  p.stddev_ns = std::sqrt(p.variance);
  const double z = normal_quantile((1.0 + confidence) / 2.0);
  p.ci_low_ns = p.rt_ns - z * p.stddev_ns;
  p.ci_high_ns = p.rt_ns + z * p.stddev_ns;
  return p;
}

LinkChange link_change(const GradientEstimate& gradient, double delta_latency_ns,
                       double delta_latency_variance) {
  return {delta_latency_ns, delta_latency_variance, gradient.value,
          gradient.standard_error * gradient.standard_error};
}

}  // namespace nabla::analysis
