#pragma once
// `nabla load --memlat`: memory latency sampled beside the tail measurement
// (docs/memlat.md). The counters are opened before the run is stored, so a
// machine without them exits 3 having stored nothing.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <variant>
#include <vector>

#include "nabla/coordinator/load_command.hh"
#include "nabla/coordinator/memlat_sampler.hh"
#include "nabla/memlat/counters.hh"

namespace nabla::coordinator {

struct LoadMemlat {
  memlat::CounterSet counters;
  memlat::EstimatorConstants constants;
  std::int64_t interval_ns = 0;
  std::string target;  // "system" or "pid 1234"
  // Why the memory controllers are not counted beside the cores; "" when
  // they are.
  std::string imc_unavailable;
};

// Checks the --memlat flags (std::invalid_argument naming the flag, also
// for --memlat-pid or --memlat-interval without --memlat); nullopt-like
// monostate when --memlat is off; the reason when counters cannot be had.
std::variant<std::monostate, LoadMemlat, memlat::Unavailable> open_load_memlat(
    const LoadOptions& o);

// {"target", "interval_ns", "intervals", "mean_latency_ns",
// "mean_imc_latency_ns"} and, without the controllers' counters, "imc_note".
nlohmann::json memlat_summary_json(const LoadMemlat& setup,
                                   const std::vector<MemlatSampler::Interval>& intervals);

}  // namespace nabla::coordinator
