// Schema v1: constraints hold, and the views answer with the literal rows
// expected from a small hand-written history.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <string>
#include <vector>

#include "nabla/db/migrations.hh"
#include "nabla/db/sqlite.hh"
#include "temp_dir.hh"

namespace nabla::db {
namespace {

class SchemaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    db_.emplace(Database::open(dir_.file("s.db")));
    migrate(*db_);
  }
  Database& db() { return *db_; }

  // Inserts a run with the given status; returns its id.
  std::int64_t run(const std::string& status, std::int64_t started_s,
                   const std::string& kind = "run") {
    const bool ended = status != "running";
    Statement st(db(),
                 "INSERT INTO runs (kind, status, tool_version, started_ns, ended_ns, error, pid, "
                 "pid_start_ticks, boot_id) VALUES (?, ?, '0.1', ?, ?, ?, 1, 1, 'b')");
    st.bind(1, kind).bind(2, status).bind(3, started_s * 1'000'000'000);
    st.bind(4,
            ended ? std::optional<std::int64_t>((started_s + 10) * 1'000'000'000) : std::nullopt);
    st.bind(5, status == "failed" ? std::optional<std::string>("boom") : std::nullopt);
    st.run();
    return db().last_insert_rowid();
  }

  // Expects `sql` to fail with a constraint error of the given extended code.
  void expect_constraint(const std::string& sql, int code) {
    try {
      db().exec(sql);
      ADD_FAILURE() << "accepted: " << sql;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), code) << e.what();
    }
  }

  std::vector<std::vector<std::string>> rows(const std::string& sql) {
    std::vector<std::vector<std::string>> out;
    for (const auto& row : query(db(), sql).rows) {
      std::vector<std::string> cells;
      for (const auto& v : row) cells.push_back(to_string(v));
      out.push_back(std::move(cells));
    }
    return out;
  }

  testing::TempDir dir_;
  std::optional<Database> db_;
};

using Rows = std::vector<std::vector<std::string>>;

TEST_F(SchemaTest, ForeignKeysAreEnforced) {
  db().exec("INSERT INTO transaction_types (id, name) VALUES (1, '/view')");
  expect_constraint("INSERT INTO samples VALUES (99, NULL, 1, 1, NULL, 1, 0)",
                    SQLITE_CONSTRAINT_FOREIGNKEY);
  const auto r = run("running", 1);
  const std::string ok = "INSERT INTO samples VALUES (" + std::to_string(r) + ", NULL, 1, 5, ";
  db().exec(ok + "NULL, 1, 1)");
  expect_constraint(ok + "NULL, 2, 1)", SQLITE_CONSTRAINT_FOREIGNKEY);  // no type 2
  expect_constraint(ok + "NULL, 1, 3)", SQLITE_CONSTRAINT_FOREIGNKEY);  // no source 3
  // Deleting a run deletes what was recorded for it.
  db().exec("DELETE FROM runs WHERE id = " + std::to_string(r));
  EXPECT_EQ(rows("SELECT count(*) FROM samples"), Rows{{"0"}});
}

TEST_F(SchemaTest, ChecksRejectImpossibleRows) {
  const std::string cols =
      "INSERT INTO runs (kind, status, tool_version, started_ns, ended_ns, error, pid, "
      "pid_start_ticks, boot_id) VALUES ";
  expect_constraint(cols + "('run', 'done', 'v', 1, 2, NULL, 1, 1, 'b')",
                    SQLITE_CONSTRAINT_CHECK);  // unknown status
  expect_constraint(cols + "('bench', 'running', 'v', 1, NULL, NULL, 1, 1, 'b')",
                    SQLITE_CONSTRAINT_CHECK);  // unknown kind
  expect_constraint(cols + "('run', 'failed', 'v', 1, 2, NULL, 1, 1, 'b')",
                    SQLITE_CONSTRAINT_CHECK);  // failed without error
  expect_constraint(cols + "('run', 'complete', 'v', 1, NULL, NULL, 1, 1, 'b')",
                    SQLITE_CONSTRAINT_CHECK);  // complete without end
  expect_constraint(cols + "('run', 'complete', 'v', 5, 4, NULL, 1, 1, 'b')",
                    SQLITE_CONSTRAINT_CHECK);  // ends before it starts
  expect_constraint(
      "INSERT INTO runs (kind, config, tool_version, started_ns, pid, pid_start_ticks, boot_id) "
      "VALUES ('run', '{bad', 'v', 1, 1, 1, 'b')",
      SQLITE_CONSTRAINT_CHECK);  // config not JSON
  expect_constraint(cols + "('run', 'running', 'v', 'soon', NULL, NULL, 1, 1, 'b')",
                    SQLITE_CONSTRAINT_DATATYPE);  // STRICT: text in an INTEGER column

  const auto r = std::to_string(run("complete", 1));
  expect_constraint("INSERT INTO links (run_id, proto, src_host, dst_host, dst_port) VALUES (" + r +
                        ", 'tcp', 'a', 'b', 70000)",
                    SQLITE_CONSTRAINT_CHECK);
  expect_constraint("INSERT INTO phases (run_id, kind, started_ns) VALUES (" + r + ", 'active', 1)",
                    SQLITE_CONSTRAINT_CHECK);  // active phase needs a link
  const std::string tail =
      "INSERT INTO tail_results (run_id, rate_rps, percentile, value_ns, verdict, reasons) "
      "VALUES (" +
      r + ", 1000, ";
  expect_constraint(tail + "100, 5, 'ok', '[]')", SQLITE_CONSTRAINT_CHECK);     // p100
  expect_constraint(tail + "99, NULL, 'ok', '[]')", SQLITE_CONSTRAINT_CHECK);   // ok needs value
  expect_constraint(tail + "99, NULL, 'n/a', '{}')", SQLITE_CONSTRAINT_CHECK);  // not an array
  db().exec(tail + "99, NULL, 'n/a', '[\"ci too wide\"]')");
}

TEST_F(SchemaTest, LinkLabelNamesBothEnds) {
  const auto r = std::to_string(run("complete", 1));
  db().exec("INSERT INTO links (run_id, proto, src_host, src_comm, dst_host, dst_port) VALUES (" +
            r + ", 'tcp', 'web', 'nginx', '10.0.0.2', 5432)");
  EXPECT_EQ(rows("SELECT label FROM links"), Rows{{"tcp web/nginx:0 -> 10.0.0.2:5432"}});
}

TEST_F(SchemaTest, LatestGradientsTakesNewestCompleteRunPerLinkAndType) {
  db().exec("INSERT INTO transaction_types (id, name) VALUES (1, '/view'), (2, '/bid')");
  // Run 1 (t=100, complete), run 2 (t=200, complete), run 3 (t=300, failed).
  const std::int64_t runs[] = {run("complete", 100), run("complete", 200), run("failed", 300)};
  for (std::int64_t r : runs) {
    const std::string id = std::to_string(r);
    db().exec("INSERT INTO links (run_id, proto, src_host, dst_host, dst_port) VALUES (" + id +
              ", 'tcp', 'app', 'db', 5432)");
    const std::string link = std::to_string(db().last_insert_rowid());
    db().exec("INSERT INTO gradients (run_id, link_id, type_id, value, ci_low, ci_high) VALUES (" +
              id + ", " + link + ", 1, " + std::to_string(r) + ".5, 0, 9)");
    if (r == runs[0]) {  // /bid measured only in the oldest run
      db().exec("INSERT INTO gradients (run_id, link_id, type_id, value) VALUES (" + id + ", " +
                link + ", 2, 0.25)");
    }
  }
  EXPECT_EQ(
      rows("SELECT link, type, gradient, ci_low, ci_high, run_id, started "
           "FROM latest_gradients ORDER BY type"),
      (Rows{{"tcp app:0 -> db:5432", "/bid", "0.25", "NULL", "NULL", "1", "1970-01-01T00:01:40Z"},
            {"tcp app:0 -> db:5432", "/view", "2.5", "0", "9", "2", "1970-01-01T00:03:20Z"}}));
}

TEST_F(SchemaTest, RunSummaryCountsWhatEachRunRecorded) {
  db().exec("INSERT INTO campaigns (id, name, created_ns) VALUES (7, 'rubis', 0)");
  const auto a = run("complete", 60);
  const auto b = run("failed", 120, "load");
  db().exec("UPDATE runs SET campaign_id = 7 WHERE id = " + std::to_string(a));
  db().exec("INSERT INTO transaction_types (id, name) VALUES (1, '/view')");
  db().exec("INSERT INTO samples VALUES (" + std::to_string(a) + ", NULL, 1, 5, NULL, 1, 1), (" +
            std::to_string(a) + ", NULL, 2, 6, NULL, 1, 1)");
  db().exec("INSERT INTO tail_results (run_id, rate_rps, percentile, verdict) VALUES (" +
            std::to_string(b) + ", 500, 99, 'n/a')");
  EXPECT_EQ(rows("SELECT * FROM run_summary ORDER BY run_id"),
            (Rows{{"1", "rubis", "run", "complete", "1970-01-01T00:01:00Z", "10", "0", "2", "0",
                   "0", "NULL"},
                  {"2", "NULL", "load", "failed", "1970-01-01T00:02:00Z", "10", "0", "0", "0", "1",
                   "boom"}}));
}

TEST_F(SchemaTest, TailOverTimeListsCompleteRunsInOrder) {
  db().exec("INSERT INTO transaction_types (id, name) VALUES (1, '/view')");
  const auto late = std::to_string(run("complete", 200, "load"));
  const auto early = std::to_string(run("complete", 100, "load"));
  const auto broken = std::to_string(run("failed", 150, "load"));
  for (const auto& r : {late, early, broken}) {
    db().exec(
        "INSERT INTO tail_results (run_id, type_id, rate_rps, percentile, value_ns, ci_low_ns, "
        "ci_high_ns, verdict) VALUES (" +
        r + ", NULL, 1000, 99, " + r + "000, 1, 2000000, 'ok')");
  }
  db().exec(
      "INSERT INTO tail_results (run_id, type_id, rate_rps, percentile, verdict, reasons) "
      "VALUES (" +
      late + ", 1, 1000, 99.9, 'n/a', '[\"not stationary\"]')");
  EXPECT_EQ(rows("SELECT run_id, started, type, rate_rps, percentile, value_ns, verdict, reasons "
                 "FROM tail_over_time"),
            (Rows{{early, "1970-01-01T00:01:40Z", "*", "1000", "99", "2000", "ok", "[]"},
                  {late, "1970-01-01T00:03:20Z", "*", "1000", "99", "1000", "ok", "[]"},
                  {late, "1970-01-01T00:03:20Z", "/view", "1000", "99.9", "NULL", "n/a",
                   "[\"not stationary\"]"}}));
}

}  // namespace
}  // namespace nabla::db
