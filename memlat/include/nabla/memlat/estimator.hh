#pragma once
// The run-time memory latency estimator (docs/memlat.md): from four core
// counters over one interval, the mean time an application's reads that miss
// the last-level cache wait before they are filled,
//
//     l = (c_cache + c_memory) / f
//     c_memory = scale · Σ_t r_t / r_total        (core cycles per request)
//     f = cycles / ref_cycles · f_base            (mean busy core frequency)
//
// Σ_t r_t is the cumulative count of outstanding LLC-miss reads, one per
// request per cycle, r_total the number of such requests; c_cache is the
// cycles a request spends in the cache hierarchy, a per-platform constant.
// `scale` is 1 where the counter adds the outstanding requests every cycle
// (Intel) and the vendor's factor where it counts in units (AMD Zen).
//
// The memory-controller variant (uncore counters) is
//     l_iMC = occupancy / inserts / f_iMC + t_CAS
// with f_iMC = clockticks / interval.
#include <cstdint>
#include <optional>
#include <vector>

namespace nabla::memlat {

// The memory controllers' counts over one interval: occupancy and inserts
// summed over every iMC channel, clockticks the mean per channel (the
// controllers' clock).
struct ImcCounts {
  double rpq_occupancy = 0;  // UNC_M_RPQ_OCCUPANCY
  double rpq_inserts = 0;    // UNC_M_RPQ_INSERTS
  double clockticks = 0;     // UNC_M_CLOCKTICKS
};

// Counter deltas over one interval.
struct CounterSample {
  std::int64_t interval_ns = 0;
  double cycles = 0;               // unhalted core cycles
  double ref_cycles = 0;           // unhalted reference cycles (fixed frequency f_base)
  double outstanding = 0;          // Σ_t r_t: outstanding LLC-miss reads summed over cycles
  double requests = 0;             // r_total: LLC-miss reads
  std::optional<ImcCounts> imc{};  // nullopt: no uncore iMC counters read
};

struct EstimatorConstants {
  double cache_cycles = 44;      // c_cache
  double base_ghz = 2.1;         // f_base
  double outstanding_scale = 1;  // cycles per unit of `outstanding`
  double cas_ns = 14;            // t_CAS of the DRAM, for the memory-controller variant
};

struct LatencyEstimate {
  double latency_ns = 0;
  double memory_cycles = 0;  // c_memory
  double total_cycles = 0;   // c_cache + c_memory
  double frequency_ghz = 0;  // f
};

// nullopt when the interval has no LLC-miss read or no reference cycles
// (nothing ran): there is no latency to estimate, not a zero one.
std::optional<LatencyEstimate> estimate_latency(const CounterSample& s,
                                                const EstimatorConstants& k);

// The mean of the interval estimates that exist (the paper's run average);
// nullopt when none does.
std::optional<double> mean_latency_ns(const std::vector<CounterSample>& samples,
                                      const EstimatorConstants& k);

struct ImcSample {
  std::int64_t interval_ns = 0;
  double rpq_occupancy = 0;  // UNC_M_RPQ_OCCUPANCY: read-queue entries summed over iMC cycles
  double rpq_inserts = 0;    // UNC_M_RPQ_INSERTS: reads entering the queue
  double clockticks = 0;     // UNC_M_CLOCKTICKS
};

// l_iMC in ns, t_CAS added for DRAM (pass 0 for persistent memory, whose
// requests stay queued until filled); nullopt without inserts or ticks.
std::optional<double> imc_latency_ns(const ImcSample& s, double cas_ns);
// The same for an interval's iMC counts; nullopt without them.
std::optional<double> interval_imc_latency_ns(const CounterSample& s, double cas_ns);
// The mean of the interval iMC estimates that exist; nullopt when none does.
std::optional<double> mean_imc_latency_ns(const std::vector<CounterSample>& samples, double cas_ns);

}  // namespace nabla::memlat
