#pragma once
// JSON forms of what crosses between the controller and a load agent
// (nabla-loadd): the workload an agent runs, what a round did, its samples.
// Both ends use these, so they cannot drift (docs/protocol.md, "nabla-loadd").
//
// Durations are integer nanoseconds in keys ending `_ns`. from_json rejects
// unknown keys and bad values with std::invalid_argument naming the key
// ("engine.connections: must be 1 .. 65536"), so an agent answers a bad
// request with one clear error and serves on.
#include <nlohmann/json.hpp>
#include <span>
#include <vector>

#include "nabla/analysis/histogram.hh"
#include "nabla/loadgen/controller_checks.hh"
#include "nabla/loadgen/engine.hh"

namespace nabla::loadgen {

// The workload only: target, TLS (name, verify, CA file path on the agent),
// threads, connections, K, schedule, protocol (mix, keys, values, gRPC
// messages as base64), bounds, timeouts, late threshold, record_samples,
// seed. Settings of the agent's own host (cpus, rt_priority, slice, spin,
// poll budget, busy polling, timestamps, PHC, the stop flag, the TLS session
// cache) are the agent's flags and never cross.
nlohmann::json engine_config_to_json(const EngineConfig& config);
EngineConfig engine_config_from_json(const nlohmann::json& json);

// Exact: configuration, the non-zero buckets, min, max, sum, out-of-range.
nlohmann::json histogram_to_json(const analysis::LatencyHistogram& histogram);
analysis::LatencyHistogram histogram_from_json(const nlohmann::json& json);

// A round without its samples: every count, error, per-type count,
// histogram, send timer and setup of the EngineResult, and the agent's own
// CalibrationCheck.
struct RoundSummary {
  EngineResult result;  // samples empty
  CalibrationCheck check;
};
nlohmann::json round_summary_to_json(const EngineResult& result, const CalibrationCheck& check);
RoundSummary round_summary_from_json(const nlohmann::json& json);

// Samples as columns (one array per field), compact enough for pages of
// 8192 samples per frame.
nlohmann::json samples_to_json(std::span<const Sample> samples);
std::vector<Sample> samples_from_json(const nlohmann::json& json);

}  // namespace nabla::loadgen
