#include "nabla/db/migrations.hh"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "temp_dir.hh"

namespace nabla::db {
namespace {

std::vector<std::string> tables(Database& db) {
  std::vector<std::string> names;
  for (auto& row :
       query(db, "SELECT name FROM sqlite_schema WHERE type IN ('table', 'view') ORDER BY name")
           .rows) {
    names.push_back(std::get<std::string>(row[0]));
  }
  return names;
}

TEST(Migrations, EmptyFileBecomesCurrentSchemaAndReopenIsNoop) {
  testing::TempDir dir;
  {
    Database db = Database::open(dir.file("m.db"));
    EXPECT_EQ(db.user_version(), 0);
    EXPECT_EQ(migrate(db), schema_version());
    EXPECT_EQ(db.user_version(), schema_version());
  }
  Database db = Database::open(dir.file("m.db"), OpenMode::kReadWrite);
  EXPECT_EQ(migrate(db), 0);
  EXPECT_EQ(db.user_version(), schema_version());
  EXPECT_EQ(query(db, "PRAGMA application_id").rows[0][0], Value(kApplicationId));
  EXPECT_EQ(tables(db),
            (std::vector<std::string>{"campaigns", "flows", "gradients", "injections",
                                      "latest_gradients", "links", "memlat", "nodes", "phases",
                                      "run_summary", "runs", "samples", "tail_over_time",
                                      "tail_results", "timestamp_sources", "transaction_types"}));
  EXPECT_EQ(query(db, "PRAGMA integrity_check").rows[0][0], Value(std::string("ok")));
  EXPECT_TRUE(query(db, "PRAGMA foreign_key_check").rows.empty());
  EXPECT_NO_THROW(require_current_schema(db));
}

TEST(Migrations, StepsApplyInOrderEachInItsOwnTransaction) {
  testing::TempDir dir;
  Database db = Database::open(dir.file("m.db"));
  const std::vector<std::string_view> v2 = {"CREATE TABLE a (x INTEGER)",
                                            "INSERT INTO a VALUES (2)"};
  EXPECT_EQ(migrate(db, std::span(v2).first(1)), 1);
  EXPECT_EQ(db.user_version(), 1);
  EXPECT_EQ(migrate(db, v2), 1);  // only the new step runs
  EXPECT_EQ(db.user_version(), 2);
  EXPECT_EQ(query(db, "SELECT x FROM a").rows.size(), 1u);

  // A failing step is rolled back whole and leaves the version where it was.
  const std::vector<std::string_view> v3 = {v2[0], v2[1],
                                            "CREATE TABLE b (y); INSERT INTO nope VALUES (1)"};
  EXPECT_THROW(migrate(db, v3), Error);
  EXPECT_EQ(db.user_version(), 2);
  EXPECT_EQ(tables(db), (std::vector<std::string>{"a"}));
  EXPECT_FALSE(db.in_transaction());
}

TEST(Migrations, NewerDatabaseIsRefusedWithAClearMessage) {
  testing::TempDir dir;
  Database db = Database::open(dir.file("m.db"));
  migrate(db);
  db.set_user_version(schema_version() + 1);
  try {
    migrate(db);
    FAIL() << "newer schema accepted";
  } catch (const Error& e) {
    const std::string want = "database schema version " + std::to_string(schema_version() + 1) +
                             " is newer than this nabla understands (" +
                             std::to_string(schema_version()) + "); use a newer nabla";
    EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << e.what();
  }
  EXPECT_THROW(require_current_schema(db), Error);
}

TEST(Migrations, ForeignFilesAreNotTouched) {
  testing::TempDir dir;
  Database db = Database::open(dir.file("other.db"));
  db.exec("CREATE TABLE mine (x)");
  try {
    migrate(db);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("not a nabla database"), std::string::npos);
  }
  EXPECT_EQ(tables(db), (std::vector<std::string>{"mine"}));
  db.set_user_version(1);  // versioned, but someone else's application id
  EXPECT_THROW(migrate(db), Error);
}

TEST(Migrations, ReadOnlyOpenNeedsCurrentSchema) {
  testing::TempDir dir;
  { Database::open(dir.file("m.db")); }
  Database ro = Database::open(dir.file("m.db"), OpenMode::kReadOnly);
  try {
    require_current_schema(ro);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("open it read-write once to migrate"), std::string::npos);
  }
}

}  // namespace
}  // namespace nabla::db
