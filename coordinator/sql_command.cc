#include "nabla/coordinator/sql_command.hh"

#include <CLI/CLI.hpp>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <ostream>
#include <stdexcept>

#include "nabla/coordinator/history_db.hh"
#include "nabla/db/sqlite.hh"
#include "nabla/db/user_query.hh"

namespace nabla::coordinator {
namespace {

using nlohmann::json;

json to_json(const db::Value& v) {
  return std::visit(
      [](const auto& x) -> json {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::monostate>) {
          return nullptr;
        } else if constexpr (std::is_same_v<T, db::Blob>) {
          return "x'" + db::to_string(db::Value(x)) + "'";
        } else {
          return x;
        }
      },
      v);
}

json rows_to_json(const db::QueryResult& r) {
  json rows = json::array();
  for (const auto& row : r.rows) {
    json obj = json::object();
    for (std::size_t i = 0; i < r.columns.size(); ++i) obj[r.columns[i]] = to_json(row[i]);
    rows.push_back(std::move(obj));
  }
  return rows;
}

// NULL is an empty cell, in CSV and in the table.
std::string cell_text(const db::Value& v) {
  return std::holds_alternative<std::monostate>(v) ? std::string() : db::to_string(v);
}

void print_csv(const db::QueryResult& r, std::ostream& out) {
  for (std::size_t i = 0; i < r.columns.size(); ++i) out << (i ? "," : "") << r.columns[i];
  out << '\n';
  for (const auto& row : r.rows) {
    for (std::size_t i = 0; i < row.size(); ++i)
      out << (i ? "," : "") << csv_field(cell_text(row[i]));
    out << '\n';
  }
}

void print_table(const db::QueryResult& r, std::ostream& out) {
  TextTable table(r.columns);
  for (const auto& row : r.rows) {
    std::vector<std::string> cells;
    for (const auto& v : row) cells.push_back(cell_text(v));
    table.add_row(std::move(cells));
  }
  table.print(out);
  out << "(" << r.rows.size() << (r.rows.size() == 1 ? " row)\n" : " rows)\n");
}

}  // namespace

void sql_query(const std::string& db_path, const std::string& sql, OutputFormat format,
               std::ostream& out, const db::UserQueryLimits& limits) {
  db::Store store = open_history_read_only(db_path);
  db::QueryResult result;
  try {
    result = db::user_query(store.database(), sql, limits);
  } catch (const db::UserQueryError& e) {
    throw std::runtime_error(std::string("nabla sql: ") + e.what());
  }
  switch (format) {
    case OutputFormat::kJson:
      out << rows_to_json(result).dump(2) << '\n';
      return;
    case OutputFormat::kCsv:
      print_csv(result, out);
      return;
    case OutputFormat::kTable:
      print_table(result, out);
      return;
  }
}

void register_sql_command(CLI::App& app) {
  auto sql = std::make_shared<std::string>();
  auto db_path = std::make_shared<std::string>("nabla.db");
  auto as_json = std::make_shared<bool>(false);
  auto as_csv = std::make_shared<bool>(false);
  auto max_memory_mib = std::make_shared<std::int64_t>(256);
  auto timeout_s = std::make_shared<std::int64_t>(600);
  auto* cmd = app.add_subcommand("sql", "run one SQL statement on the run history, read-only");
  cmd->add_option("QUERY", *sql, "e.g. \"SELECT * FROM run_summary\"")->required();
  cmd->add_option("--db", *db_path, "SQLite database")->default_str("nabla.db");
  auto* j = cmd->add_flag("--json", *as_json, "print JSON rows");
  cmd->add_flag("--csv", *as_csv, "print CSV")->excludes(j);
  cmd->add_option("--max-memory", *max_memory_mib,
                  "MiB the query may use (SQLite's heap, and the rows held for printing)")
      ->default_val(256)
      ->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--timeout", *timeout_s, "seconds before the query is stopped (0 = never)")
      ->default_val(600)
      ->check(CLI::Range(0, 1 << 30));
  cmd->callback([sql, db_path, as_json, as_csv, max_memory_mib, timeout_s] {
    db::UserQueryLimits limits;
    limits.memory_bytes = *max_memory_mib << 20;
    limits.timeout_ns = *timeout_s * 1'000'000'000;
    sql_query(*db_path, *sql,
              *as_json  ? OutputFormat::kJson
              : *as_csv ? OutputFormat::kCsv
                        : OutputFormat::kTable,
              std::cout, limits);
  });
}

}  // namespace nabla::coordinator
