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

std::optional<double> mean_latency_ns(const std::vector<CounterSample>& samples,
                                      const EstimatorConstants& k) {
  double sum = 0;
  int n = 0;
  for (const CounterSample& s : samples) {
    if (const auto e = estimate_latency(s, k)) {
      sum += e->latency_ns;
      ++n;
    }
  }
  if (n == 0) return std::nullopt;
  return sum / n;
}

std::optional<double> imc_latency_ns(const ImcSample& s, double cas_ns) {
  if (!(s.rpq_inserts > 0) || !(s.clockticks > 0) || s.interval_ns <= 0) return std::nullopt;
  const double imc_ghz = s.clockticks / static_cast<double>(s.interval_ns);
  return s.rpq_occupancy / s.rpq_inserts / imc_ghz + cas_ns;
}

}  // namespace nabla::memlat
