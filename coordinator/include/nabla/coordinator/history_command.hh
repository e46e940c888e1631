#pragma once
// The run history: `nabla runs list|show|export` and `nabla sql`.
//
// `runs` opens the database read-write when it can, so that runs whose
// process died are marked `failed` before they are listed (db/store.hh);
// `sql` opens it read-only, so a query can never change or corrupt a stored
// run. Neither creates a database: a missing file is an error naming it.
#include <cstdint>
#include <iosfwd>
#include <nlohmann/json.hpp>
#include <string>

namespace CLI {
class App;
}

namespace nabla::coordinator {

enum class OutputFormat { kTable, kJson, kCsv };

// Runs, newest first (the run_summary view).
nlohmann::json runs_list(const std::string& db_path, int limit);
// One run: its row, counts, gradients and tail results.
nlohmann::json runs_show(const std::string& db_path, std::int64_t run_id);
// A run's samples: CSV `t_ns,latency_ns,type` (the input of `nabla analyze`),
// or JSON with the run, its gradients, tail results and every sample field.
void runs_export(const std::string& db_path, std::int64_t run_id, OutputFormat format,
                 std::ostream& out);
// Any single SQL statement on a read-only connection.
void sql_query(const std::string& db_path, const std::string& sql, OutputFormat format,
               std::ostream& out);

void register_history_commands(CLI::App& app);

}  // namespace nabla::coordinator
