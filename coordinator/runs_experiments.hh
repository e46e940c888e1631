#pragma once
// The experiments section of `nabla runs show` (private to coordinator/):
// the two tables of a run's fault experiments (docs/cli.md, "nabla runs"),
// from their JSON (campaign/experiment_rows.hh).
#include <cstdint>
#include <nlohmann/json.hpp>
#include <ostream>

namespace nabla::coordinator {

// The experiments and their checks; nothing when there are none.
void print_experiments(const nlohmann::json& experiments, std::ostream& out);

}  // namespace nabla::coordinator
