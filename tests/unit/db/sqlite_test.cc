#include "nabla/db/sqlite.hh"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <cmath>
#include <limits>

#include "temp_dir.hh"

namespace nabla::db {
namespace {

class SqliteTest : public ::testing::Test {
 protected:
  void SetUp() override {
    db_.emplace(Database::open(dir_.file("t.db")));
    db_->exec("CREATE TABLE t (i INTEGER, r REAL, s TEXT, b BLOB)");
  }
  Database& db() { return *db_; }

  testing::TempDir dir_;
  std::optional<Database> db_;
};

TEST_F(SqliteTest, OpenAppliesConnectionPragmas) {
  auto one = [&](const char* sql) {
    Statement st(db(), sql);
    EXPECT_TRUE(st.step()) << sql;
    return st.column_value(0);
  };
  EXPECT_EQ(one("PRAGMA journal_mode"), Value(std::string("wal")));
  EXPECT_EQ(one("PRAGMA foreign_keys"), Value(std::int64_t{1}));
  EXPECT_EQ(one("PRAGMA busy_timeout"), Value(std::int64_t{Database::kBusyTimeoutMs}));
  EXPECT_EQ(one("PRAGMA synchronous"), Value(std::int64_t{1}));  // NORMAL
}

TEST_F(SqliteTest, BindsRoundTripEveryStorageClass) {
  Statement ins(db(), "INSERT INTO t VALUES (?, ?, ?, ?)");
  const Blob blob = {0x00, 0xff, 0x10};
  ins.bind(1, std::numeric_limits<std::int64_t>::min())
      .bind(2, 0.1)
      .bind(3, std::string_view("h\0llo", 5))
      .bind(4, blob);
  ins.run();
  ins.bind(1, 7).bind(2, nullptr).bind(3, std::optional<std::string>{}).bind(4, Blob{});
  ins.run();

  Statement sel(db(), "SELECT i, r, s, b FROM t ORDER BY rowid");
  ASSERT_TRUE(sel.step());
  EXPECT_EQ(sel.column_int64(0), std::numeric_limits<std::int64_t>::min());
  EXPECT_EQ(sel.column_double(1), 0.1);
  EXPECT_EQ(sel.column_text(2), std::string("h\0llo", 5));
  EXPECT_EQ(sel.column_blob(3), blob);
  ASSERT_TRUE(sel.step());
  EXPECT_EQ(sel.column_int64(0), 7);
  EXPECT_EQ(sel.optional_double(1), std::nullopt);
  EXPECT_EQ(sel.optional_text(2), std::nullopt);
  EXPECT_EQ(sel.column_blob(3), Blob{});  // zero-length BLOB, not NULL
  EXPECT_FALSE(sel.column_is_null(3));
  EXPECT_FALSE(sel.step());
}

TEST_F(SqliteTest, NamedParametersAndUnknownNames) {
  Statement ins(db(), "INSERT INTO t (i, s) VALUES (:i, :s)");
  ins.bind(":s", std::string("x")).bind(":i", 42);
  ins.run();
  EXPECT_EQ(ins.parameter_index(":s"), 2);
  try {
    ins.bind(":nope", 1);
    FAIL() << "unknown name accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), SQLITE_RANGE);
    EXPECT_NE(std::string(e.what()).find(":nope"), std::string::npos);
  }
  QueryResult r = query(db(), "SELECT i, s FROM t");
  ASSERT_EQ(r.rows.size(), 1u);
  EXPECT_EQ(r.rows[0][0], Value(std::int64_t{42}));
  EXPECT_EQ(r.rows[0][1], Value(std::string("x")));
}

TEST_F(SqliteTest, TypedGettersRejectOtherTypes) {
  db().exec("INSERT INTO t VALUES (1, 2.5, 'three', NULL)");
  Statement sel(db(), "SELECT i, r, s, b FROM t");
  ASSERT_TRUE(sel.step());
  EXPECT_EQ(sel.column_double(0), 1.0);  // INTEGER widens to REAL
  EXPECT_THROW(sel.column_int64(1), Error);
  EXPECT_THROW(sel.column_int64(2), Error);
  EXPECT_THROW(sel.column_text(0), Error);
  try {
    sel.column_int64(3);
    FAIL() << "NULL read as INTEGER";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), SQLITE_MISMATCH);
    EXPECT_NE(std::string(e.what()).find("'b') is NULL, wanted INTEGER"), std::string::npos)
        << e.what();
  }
}

TEST_F(SqliteTest, ErrorsCarryCodeMessageAndSql) {
  try {
    db().prepare("SELECT nope FROM t");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), SQLITE_ERROR);
    EXPECT_EQ(e.message(), "no such column: nope");
    EXPECT_EQ(e.sql(), "SELECT nope FROM t");
    EXPECT_EQ(std::string(e.what()), "no such column: nope (sqlite code 1) in: SELECT nope FROM t");
  }
  db().exec("CREATE TABLE u (x INTEGER NOT NULL)");
  Statement ins(db(), "INSERT INTO u VALUES (?)");
  ins.bind(1, nullptr);
  try {
    ins.step();
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), SQLITE_CONSTRAINT_NOTNULL);
    EXPECT_EQ(e.sql(), "INSERT INTO u VALUES (?)");
    EXPECT_NE(e.message().find("NOT NULL constraint failed: u.x"), std::string::npos);
  }
  // The statement is usable again after the failure.
  ins.bind(1, 3);
  ins.run();
  EXPECT_EQ(db().changes(), 1);
}

TEST_F(SqliteTest, TransactionRollsBackUnlessCommitted) {
  {
    Transaction tx(db());
    db().exec("INSERT INTO t (i) VALUES (1)");
    EXPECT_TRUE(db().in_transaction());
  }
  EXPECT_FALSE(db().in_transaction());
  EXPECT_TRUE(query(db(), "SELECT * FROM t").rows.empty());
  {
    Transaction tx(db());
    db().exec("INSERT INTO t (i) VALUES (2)");
    tx.commit();
  }
  EXPECT_EQ(query(db(), "SELECT i FROM t").rows.at(0).at(0), Value(std::int64_t{2}));
  try {
    Transaction tx(db());
    db().exec("INSERT INTO t (i) VALUES (3)");
    throw std::runtime_error("boom");
  } catch (const std::runtime_error&) {
  }
  EXPECT_EQ(query(db(), "SELECT count(*) FROM t").rows.at(0).at(0), Value(std::int64_t{1}));
}

TEST_F(SqliteTest, NestedTransactionsAreSavepoints) {
  Transaction outer(db());
  db().exec("INSERT INTO t (i) VALUES (1)");
  {
    Transaction inner(db());
    db().exec("INSERT INTO t (i) VALUES (2)");
  }  // rolls back only row 2
  {
    Transaction inner(db());
    db().exec("INSERT INTO t (i) VALUES (3)");
    inner.commit();
  }
  EXPECT_TRUE(db().in_transaction());
  outer.commit();
  EXPECT_FALSE(db().in_transaction());
  EXPECT_EQ(query(db(), "SELECT group_concat(i) FROM t").rows[0][0], Value(std::string("1,3")));
}

TEST_F(SqliteTest, SecondWriterWaitsThenFailsBusy) {
  // Another connection holds the write lock; BEGIN IMMEDIATE on ours fails
  // with SQLITE_BUSY after busy_timeout. Shorten the timeout for the test.
  Database other = Database::open(dir_.file("t.db"), OpenMode::kReadWrite);
  Transaction hold(other);
  sqlite3_busy_timeout(db().handle(), 50);
  try {
    Transaction tx(db());
    FAIL() << "write lock not exclusive";
  } catch (const Error& e) {
    EXPECT_EQ(e.code() & 0xff, SQLITE_BUSY);
    EXPECT_EQ(e.sql(), "BEGIN IMMEDIATE");
  }
}

TEST_F(SqliteTest, QueryRunsExactlyOneStatement) {
  db().exec("INSERT INTO t VALUES (1, 1.5, 'a', x'0102')");
  QueryResult r = query(db(), "SELECT i AS n, r, s, b, NULL AS z FROM t; -- trailing comment\n");
  EXPECT_EQ(r.columns, (std::vector<std::string>{"n", "r", "s", "b", "z"}));
  ASSERT_EQ(r.rows.size(), 1u);
  EXPECT_EQ(to_string(r.rows[0][1]), "1.5");
  EXPECT_EQ(to_string(r.rows[0][3]), "x'0102'");
  EXPECT_EQ(to_string(r.rows[0][4]), "NULL");
  EXPECT_THROW(query(db(), "SELECT 1; DELETE FROM t"), Error);
  EXPECT_THROW(db().prepare("DELETE FROM t; SELECT 1"), Error);
  EXPECT_THROW(db().prepare("  -- nothing\n"), Error);
  EXPECT_EQ(query(db(), "SELECT count(*) FROM t").rows[0][0], Value(std::int64_t{1}));
  const std::vector<Value> params = {Value(std::int64_t{1})};
  EXPECT_EQ(query(db(), "SELECT s FROM t WHERE i = ?", params).rows[0][0], Value(std::string("a")));
}

TEST_F(SqliteTest, ReadOnlyOpenRefusesWrites) {
  db().exec("INSERT INTO t (i) VALUES (1)");
  Database ro = Database::open(dir_.file("t.db"), OpenMode::kReadOnly);
  EXPECT_TRUE(ro.read_only());
  EXPECT_EQ(query(ro, "SELECT i FROM t").rows.size(), 1u);
  try {
    ro.exec("DELETE FROM t");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code() & 0xff, SQLITE_READONLY);
  }
  EXPECT_THROW(Database::open(dir_.file("missing.db"), OpenMode::kReadOnly), Error);
}

TEST_F(SqliteTest, DefensiveModeBlocksSchemaTampering) {
  db().exec("PRAGMA writable_schema = ON");  // accepted but ignored in defensive mode
  EXPECT_THROW(db().exec("UPDATE sqlite_schema SET sql = 'x' WHERE name = 't'"), Error);
}

TEST(ValueToString, RendersDoublesShortestRoundTrip) {
  EXPECT_EQ(to_string(Value(0.1)), "0.1");
  EXPECT_EQ(to_string(Value(1e300)), "1e+300");
  EXPECT_EQ(to_string(Value(std::int64_t{-5})), "-5");
}

}  // namespace
}  // namespace nabla::db
