#pragma once
// Private to `nabla runs show`: the sections of what `nabla accel` and
// `nabla memlat` (and `nabla load --memlat`) store, as JSON and as tables.
// Each section is null when the run stored none of its rows.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <ostream>

namespace nabla::db {
class Database;
}

namespace nabla::coordinator {

// {"results": [accel_results rows], "projections": [accel_projections rows]}.
nlohmann::json accel_section_json(db::Database& db, std::int64_t run_id);
// {"intervals": [memlat rows], "mean_latency_ns", "mean_imc_latency_ns",
//  "probe": [memlat_probe rows]}.
nlohmann::json memlat_section_json(db::Database& db, std::int64_t run_id);

void print_accel_section(const nlohmann::json& accel, std::ostream& out);
void print_memlat_section(const nlohmann::json& memlat, std::ostream& out);

}  // namespace nabla::coordinator
