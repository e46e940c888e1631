#pragma once
// `nabla sql QUERY [--db F] [--json|--csv] [--max-memory MIB] [--timeout S]`:
// any single SQL statement on the run history that only reads. The
// connection is read-only and an authorizer refuses everything but reads
// (no ATTACH, no VACUUM INTO, no write, no pragma that sets), with memory
// and time limits (db/user_query.hh), so a query can never change, copy out
// or corrupt a stored run, nor take the machine's memory. The one command that reads the database
// by the user's own SQL; everything else uses the typed reads (db/reads.hh).
#include <iosfwd>
#include <string>

#include "nabla/coordinator/text_table.hh"
#include "nabla/db/user_query.hh"

namespace CLI {
class App;
}

namespace nabla::coordinator {

void sql_query(const std::string& db_path, const std::string& sql, OutputFormat format,
               std::ostream& out, const db::UserQueryLimits& limits = {});

void register_sql_command(CLI::App& app);

}  // namespace nabla::coordinator
