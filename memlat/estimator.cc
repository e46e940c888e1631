#include "nabla/memlat/estimator.hh"

namespace nabla::memlat {

std::optional<LatencyEstimate> estimate_latency(const CounterSample& s,
                                                const EstimatorConstants& k) {
  if (!(s.requests > 0) || !(s.ref_cycles > 0) || !(s.cycles > 0)) return std::nullopt;
  LatencyEstimate e;
  e.memory_cycles = k.outstanding_scale * s.outstanding / s.requests;
  e.total_cycles = k.cache_cycles + e.memory_cycles;
  e.frequency_ghz = s.cycles / s.ref_cycles * k.base_ghz;
  e.latency_ns = e.total_cycles / e.frequency_ghz;
  return e;
}

namespace {

// The mean of the estimates `estimate` gives for the samples that have one.
template <typename Estimate>
std::optional<double> mean_of(const std::vector<CounterSample>& samples, Estimate estimate) {
  double sum = 0;
  int n = 0;
  for (const CounterSample& s : samples) {
    if (const std::optional<double> l = estimate(s)) {
      sum += *l;
      ++n;
    }
  }
  if (n == 0) return std::nullopt;
  return sum / n;
}

}  // namespace

std::optional<double> mean_latency_ns(const std::vector<CounterSample>& samples,
                                      const EstimatorConstants& k) {
  return mean_of(samples, [&](const CounterSample& s) -> std::optional<double> {
    if (const auto e = estimate_latency(s, k)) return e->latency_ns;
    return std::nullopt;
  });
}

std::optional<double> mean_imc_latency_ns(const std::vector<CounterSample>& samples,
                                          double cas_ns) {
  return mean_of(samples,
                 [&](const CounterSample& s) { return interval_imc_latency_ns(s, cas_ns); });
}

std::optional<double> imc_latency_ns(const ImcSample& s, double cas_ns) {
  if (!(s.rpq_inserts > 0) || !(s.clockticks > 0) || s.interval_ns <= 0) return std::nullopt;
  const double imc_ghz = s.clockticks / static_cast<double>(s.interval_ns);
  return s.rpq_occupancy / s.rpq_inserts / imc_ghz + cas_ns;
}

std::optional<double> interval_imc_latency_ns(const CounterSample& s, double cas_ns) {
  if (!s.imc) return std::nullopt;
  return imc_latency_ns(
      ImcSample{s.interval_ns, s.imc->rpq_occupancy, s.imc->rpq_inserts, s.imc->clockticks},
      cas_ns);
}

}  // namespace nabla::memlat
