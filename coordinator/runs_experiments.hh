#pragma once
// The experiments section of `nabla runs show` (private to coordinator/):
// the JSON of a run's fault experiments with every SLO term per window, and
// its two tables (docs/cli.md, "nabla runs").
#include <cstdint>
#include <nlohmann/json.hpp>
#include <ostream>

namespace nabla::db {
class Database;
}

namespace nabla::coordinator {

nlohmann::json experiments_json(db::Database& db, std::int64_t run_id);
// The experiments and their checks; nothing when there are none.
void print_experiments(const nlohmann::json& experiments, std::ostream& out);

}  // namespace nabla::coordinator
