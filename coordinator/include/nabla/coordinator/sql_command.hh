#pragma once
// `nabla sql QUERY [--db F] [--json|--csv]`: any single SQL statement on the
// run history, on a read-only connection, so a query can never change or
// corrupt a stored run. The one command that reads the database by the
// user's own SQL; everything else uses the typed reads (db/reads.hh).
#include <iosfwd>
#include <string>

#include "nabla/coordinator/text_table.hh"

namespace CLI {
class App;
}

namespace nabla::coordinator {

void sql_query(const std::string& db_path, const std::string& sql, OutputFormat format,
               std::ostream& out);

void register_sql_command(CLI::App& app);

}  // namespace nabla::coordinator
