#pragma once
// Private to `nabla memlat` and `nabla load --memlat`: one interval of
// memory-latency counters as a row of the run history's memlat table, with
// the core estimate and, where the iMC was counted, the controller's.
#include <cstdint>
#include <string>

#include "nabla/db/records.hh"
#include "nabla/memlat/estimator.hh"

namespace nabla::coordinator {

db::MemlatSample memlat_row(std::int64_t run_id, std::int64_t t_ns,
                            const memlat::CounterSample& counters,
                            const memlat::EstimatorConstants& constants, const std::string& target);

}  // namespace nabla::coordinator
