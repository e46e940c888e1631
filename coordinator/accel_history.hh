#pragma once
// Private to `nabla accel`: its evaluations as a run of kind accel in the
// run history (docs/schema.md): one accel_results row per design and
// strategy, and the link-gradient projection of a remote offload.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "nabla/accel/config.hh"
#include "nabla/coordinator/predict.hh"
#include "nabla/db/records.hh"

namespace nabla::coordinator {

// The row of one evaluation: its inputs, as the model used them, and its
// outputs. `cost` is set when the offload sizes that pay off were asked.
db::AccelResult accel_result_row(std::optional<std::string> kernel, accel::Strategy strategy,
                                 accel::Design design, const accel::Params& params,
                                 const std::optional<accel::Kernel>& cost,
                                 const accel::Estimate& estimate,
                                 std::optional<double> min_bytes_speedup,
                                 std::optional<double> min_bytes_latency);

// The link-gradient side of a remote offload, as `nabla accel` computed it.
struct StoredProjection {
  std::int64_t gradient_run = 0;
  std::string link;  // the --link selector
  double added_delay_ns = 0;
  const PredictionReport* report = nullptr;
};

// Stores the run (`config`: what was asked) with its rows; returns its id.
std::int64_t store_accel_run(const std::string& db_path, const nlohmann::json& config,
                             std::int64_t started_ns, const std::vector<db::AccelResult>& results,
                             const std::optional<StoredProjection>& projection);

}  // namespace nabla::coordinator
