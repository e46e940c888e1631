// `nabla sql` cannot write anything and cannot run away (docs/security.md):
// on a real history database, VACUUM INTO makes no file, ATTACH, INSERT,
// transactions and pragma assignments are refused naming what was refused,
// and runaway recursive queries end with one clear error line and exit 1
// (the `nabla` binary with small --max-memory and --timeout), while plain
// SELECTs and read-only pragmas still work.
#include "nabla/coordinator/sql_command.hh"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "nabla/common/netns.hh"
#include "nabla/db/sqlite.hh"
#include "nabla/db/store.hh"

namespace nabla::coordinator {
namespace {

namespace fs = std::filesystem;

constexpr const char* kRunaway = "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) ";

class SqlCommand : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("nabla-sql-test-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    path_ = (dir_ / "h.db").string();
    db::Store store = db::Store::open(path_, 1'700'000'000'000'000'000);
    store.transaction_type_id("/view");
  }
  void TearDown() override { fs::remove_all(dir_); }

  // The refusal's message (empty when the statement ran).
  std::string refusal(const std::string& sql) {
    std::ostringstream out;
    try {
      sql_query(path_, sql, OutputFormat::kTable, out);
    } catch (const std::exception& e) {
      return e.what();
    }
    return "";
  }

  common::CommandResult nabla_sql(const std::vector<std::string>& extra) {
    std::vector<std::string> argv = {NABLA_BINARY, "sql", "--db", path_};
    argv.insert(argv.end(), extra.begin(), extra.end());
    return common::run_command(argv);
  }

  std::int64_t count_types() {
    db::Database db = db::Database::open(path_, db::OpenMode::kReadOnly);
    return std::get<std::int64_t>(
        db::query(db, "SELECT count(*) FROM transaction_types").rows[0][0]);
  }

  fs::path dir_;
  std::string path_;
};

// One line on stderr, exit 1 (an error, not a signal), nothing on stdout.
void expect_one_error_line(const common::CommandResult& r, const std::string& says) {
  EXPECT_EQ(r.exit_code, 1) << r.stderr_text;
  EXPECT_TRUE(r.stdout_text.empty()) << r.stdout_text.substr(0, 200);
  ASSERT_FALSE(r.stderr_text.empty());
  const std::string line = r.stderr_text.back() == '\n'
                               ? r.stderr_text.substr(0, r.stderr_text.size() - 1)
                               : r.stderr_text;
  EXPECT_EQ(line.find('\n'), std::string::npos) << r.stderr_text;
  EXPECT_EQ(line.rfind("nabla: error: nabla sql: ", 0), 0u) << line;
  EXPECT_NE(line.find(says), std::string::npos) << line;
}

TEST_F(SqlCommand, VacuumIntoCreatesNoFile) {
  const fs::path copy = dir_ / "copy.db";
  const std::string why = refusal("VACUUM INTO '" + copy.string() + "'");
  EXPECT_NE(why.find("read-only: ATTACH"), std::string::npos) << why;
  EXPECT_FALSE(fs::exists(copy));
  expect_one_error_line(nabla_sql({"VACUUM INTO '" + copy.string() + "'"}), "VACUUM INTO");
  EXPECT_FALSE(fs::exists(copy));
}

TEST_F(SqlCommand, AttachIsRefused) {
  const fs::path other = dir_ / "other.db";
  { db::Database::open(other.string()).exec("CREATE TABLE t (x)"); }
  const std::string why = refusal("ATTACH '" + other.string() + "' AS other");
  EXPECT_NE(why.find("read-only: ATTACH"), std::string::npos) << why;
  expect_one_error_line(nabla_sql({"ATTACH '" + other.string() + "' AS other"}), "ATTACH");
}

TEST_F(SqlCommand, WritesTransactionsAndPragmaAssignmentsAreRefused) {
  const std::int64_t before = count_types();
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"INSERT INTO transaction_types (name) VALUES ('/x')", "INSERT into transaction_types"},
      {"DELETE FROM transaction_types", "DELETE from transaction_types"},
      {"UPDATE transaction_types SET name = 'y'", "UPDATE of transaction_types"},
      {"CREATE TABLE t (x)", "not allowed"},
      {"DROP TABLE transaction_types", "not allowed"},
      {"BEGIN", "transaction"},
      {"SAVEPOINT s", "transaction"},
      {"PRAGMA query_only = 0", "PRAGMA query_only = 0"},
      {"PRAGMA user_version = 99", "PRAGMA user_version = 99"},
      {"PRAGMA writable_schema = 1", "PRAGMA writable_schema"},
      {"REINDEX", "REINDEX"},
      {"ANALYZE", "not allowed"},  // refused at its first write (sqlite_stat1)
  };
  for (const auto& [sql, names] : cases) {
    SCOPED_TRACE(sql);
    const std::string why = refusal(sql);
    EXPECT_NE(why.find("read-only: "), std::string::npos) << why;
    EXPECT_NE(why.find(names), std::string::npos) << why;
  }
  expect_one_error_line(nabla_sql({"INSERT INTO transaction_types (name) VALUES ('/x')"}),
                        "read-only: INSERT into transaction_types is not allowed");
  EXPECT_EQ(count_types(), before);
  db::Database db = db::Database::open(path_, db::OpenMode::kReadOnly);
  EXPECT_NE(db.user_version(), 99);
}

TEST_F(SqlCommand, RunawayRecursiveQueriesEndWithOneClearLine) {
  const std::vector<std::string> limits = {"--max-memory", "16", "--timeout", "2"};
  struct Case {
    std::string select;
    std::string says;
  };
  const std::vector<Case> cases = {
      {"SELECT n FROM r", "the result holds more than 16 MiB (--max-memory)"},
      {"SELECT n FROM r ORDER BY n DESC", "needs more than 16 MiB of memory (--max-memory)"},
      {"SELECT count(*) FROM r", "ran longer than 2 s (--timeout)"},
      // An aggregate over endless rows (its result is too long, but it is
      // told only at the end, never reached): the time limit.
      {"SELECT group_concat(n) FROM r", "ran longer than 2 s (--timeout)"},
  };
  std::vector<std::string> queries;
  for (const Case& c : cases) queries.push_back(std::string(kRunaway) + c.select);
  // A value that doubles each row: the rows the recursion keeps meet the
  // heap limit (its one value would meet SQLITE_LIMIT_LENGTH a row later).
  queries.push_back(
      "WITH RECURSIVE r(s) AS (SELECT 'x' UNION ALL SELECT s || s FROM r) SELECT length(s) FROM r");
  std::vector<std::string> says;
  for (const Case& c : cases) says.push_back(c.says);
  says.push_back("needs more than 16 MiB of memory (--max-memory)");
  // One value longer than a quarter of --max-memory.
  queries.push_back("SELECT length(zeroblob(8000000))");
  says.push_back("a string or blob grew past 4194304 bytes");
  for (std::size_t i = 0; i < queries.size(); ++i) {
    SCOPED_TRACE(queries[i]);
    std::vector<std::string> args = {queries[i]};
    args.insert(args.end(), limits.begin(), limits.end());
    expect_one_error_line(nabla_sql(args), says[i]);
  }
}

TEST_F(SqlCommand, PlainSelectsAndReadOnlyPragmasStillWork) {
  std::ostringstream csv;
  sql_query(path_, "SELECT name FROM transaction_types", OutputFormat::kCsv, csv);
  EXPECT_EQ(csv.str(), "name\n/view\n");
  std::ostringstream bounded;
  sql_query(path_,
            "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 1000) "
            "SELECT sum(n) AS s FROM r",
            OutputFormat::kCsv, bounded);
  EXPECT_EQ(bounded.str(), "s\n500500\n");
  std::ostringstream info;
  sql_query(path_, "PRAGMA table_info(transaction_types)", OutputFormat::kJson, info);
  EXPECT_FALSE(nlohmann::json::parse(info.str()).empty());
  std::ostringstream version;
  sql_query(path_, "PRAGMA user_version", OutputFormat::kCsv, version);
  EXPECT_EQ(version.str().rfind("user_version\n", 0), 0u);
  const auto r = nabla_sql({"SELECT count(*) AS n FROM transaction_types", "--json"});
  EXPECT_EQ(r.exit_code, 0) << r.stderr_text;
  EXPECT_EQ(nlohmann::json::parse(r.stdout_text)[0]["n"], 1);
}

}  // namespace
}  // namespace nabla::coordinator
