#pragma once
// A run's stored fault experiments as JSON, with every SLO term per window:
// one writer for `nabla runs show --json` and `nabla report`.
#include <cstdint>
#include <nlohmann/json.hpp>

namespace nabla::db {
class Database;
}

namespace nabla::campaign {

// One object per experiment in the order they ran: name, verdict, links,
// spec, fault window, mean delay, observed and predicted change with CIs,
// and "checks" (window, term, bound, value, CI, verdict, extra_ns, note,
// samples, scheduled).
nlohmann::json stored_experiments_json(db::Database& db, std::int64_t run_id);

}  // namespace nabla::campaign
