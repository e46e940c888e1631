#pragma once
// `nabla runs list|show|export`: the stored runs, read through the typed
// reads (db/reads.hh).
//
// `runs` opens the database read-write when it can, so that runs whose
// process died are marked `failed` before they are listed (db/store.hh). It
// never creates a database: a missing file is an error naming it.
#include <cstdint>
#include <iosfwd>
#include <nlohmann/json.hpp>
#include <string>

#include "nabla/coordinator/text_table.hh"

namespace CLI {
class App;
}

namespace nabla::coordinator {

// Runs, newest first (the run_summary view).
nlohmann::json runs_list(const std::string& db_path, int limit);
// One run: its summary, configuration, gradients (each with its step
// estimate, its sweep's amplitudes and linearity verdict) and tail results.
nlohmann::json runs_show(const std::string& db_path, std::int64_t run_id);
// runs_show's run as text: header, gradients (with the messages per
// transaction, `!` for waits, not hops; the step; the sweep's curve and
// verdicts), tail results.
void print_run(const nlohmann::json& run, std::ostream& out);
// A run's samples: CSV `t_ns,latency_ns,type` (the input of `nabla analyze`),
// or JSON with the run, its gradients, tail results and every sample field.
// Any format but kCsv prints the JSON.
void runs_export(const std::string& db_path, std::int64_t run_id, OutputFormat format,
                 std::ostream& out);

void register_runs_command(CLI::App& app);

}  // namespace nabla::coordinator
