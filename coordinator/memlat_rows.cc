#include "memlat_rows.hh"

namespace nabla::coordinator {

db::MemlatSample memlat_row(std::int64_t run_id, std::int64_t t_ns,
                            const memlat::CounterSample& counters,
                            const memlat::EstimatorConstants& constants,
                            const std::string& target) {
  db::MemlatSample row;
  row.run_id = run_id;
  row.t_ns = t_ns;
  row.interval_ns = counters.interval_ns;
  if (const auto estimate = memlat::estimate_latency(counters, constants)) {
    row.latency_ns = estimate->latency_ns;
    row.frequency_ghz = estimate->frequency_ghz;
  }
  row.cycles = counters.cycles;
  row.ref_cycles = counters.ref_cycles;
  row.outstanding = counters.outstanding;
  row.requests = counters.requests;
  row.target = target;
  if (counters.imc) {
    row.rpq_occupancy = counters.imc->rpq_occupancy;
    row.rpq_inserts = counters.imc->rpq_inserts;
    row.imc_clockticks = counters.imc->clockticks;
    row.imc_latency_ns = memlat::interval_imc_latency_ns(counters, constants.cas_ns);
  }
  return row;
}

}  // namespace nabla::coordinator
