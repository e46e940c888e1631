#pragma once
// Private to `nabla load`: the human tables (the run-history recorder is
// load/record.hh's).
#include <cstdint>
#include <iosfwd>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "nabla/loadgen/controller.hh"

namespace nabla::coordinator {

// One rate point: verdict, reasons, the decisions, the percentile table.
void print_load_point(std::ostream& out, const nlohmann::json& point);
// Latency versus load: rate, achieved, p50 and p99 with CIs, verdict.
void print_load_sweep(std::ostream& out, const std::vector<nlohmann::json>& points);

}  // namespace nabla::coordinator
