#pragma once
// From the campaign's workload to a load run and back (private to campaign/).
#include <cstdint>
#include <memory>
#include <vector>

#include "nabla/analysis/binning.hh"
#include "nabla/campaign/spec.hh"
#include "nabla/db/store.hh"
#include "nabla/loadgen/engine.hh"

namespace nabla::campaign {

// The workload's engine (load::engine_config, the one `nabla load` uses too)
// for one phase: the campaign's rate, this duration and seed, intended send
// times kept. `sessions` keeps the TLS sessions the server issued, so each
// phase's connections resume those of the phases before (null: one per load
// run).
loadgen::EngineConfig engine_config(const WorkloadSpec& workload, std::int64_t duration_ns,
                                    std::uint64_t seed,
                                    std::shared_ptr<loadgen::TlsSessionCache> sessions = nullptr);

// Every sample as an analysis record (send time, latency, type).
std::vector<analysis::LatencyRecord> to_records(const loadgen::EngineResult& result);

// Where the run's receive times came from, as the run history names it.
db::TimestampSource db_source(const loadgen::EngineResult& result);

std::vector<analysis::LatencyRecord> of_type(const std::vector<analysis::LatencyRecord>& records,
                                             std::int32_t type);

}  // namespace nabla::campaign
