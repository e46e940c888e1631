#include "nabla/db/migrations.hh"

#include <sqlite3.h>

#include <string>

#include "nabla_db_migrations.hh"

namespace nabla::db {
namespace {

std::int64_t application_id(Database& db) {
  Statement st(db, "PRAGMA application_id");
  st.step();
  return st.column_int64(0);
}

bool has_schema_objects(Database& db) {
  Statement st(db, "SELECT count(*) FROM sqlite_schema");
  st.step();
  return st.column_int64(0) > 0;
}

[[noreturn]] void refuse(const std::string& why) {
  throw Error(SQLITE_ERROR, why, "PRAGMA user_version");
}

void check_known(Database& db, std::int64_t version, std::int64_t known) {
  if (version > known) {
    refuse("database schema version " + std::to_string(version) +
           " is newer than this nabla understands (" + std::to_string(known) +
           "); use a newer nabla");
  }
  if (version > 0 && application_id(db) != kApplicationId) {
    refuse("not a nabla database (application_id differs)");
  }
}

// Foreign keys are off while migrating (a PRAGMA that has no effect inside a
// transaction, so it is set around them): a step that rebuilds a table
// drops the old one, and with foreign keys on that drop would first delete
// every row that references it. Each step checks the keys before it commits.
class ForeignKeysOffWhileMigrating {
 public:
  explicit ForeignKeysOffWhileMigrating(Database& db) : db_(db) {
    db_.exec("PRAGMA foreign_keys = OFF");
  }
  ~ForeignKeysOffWhileMigrating() {
    try {
      db_.exec("PRAGMA foreign_keys = ON");
    } catch (...) {  // the connection is unusable anyway; its next use says why
    }
  }
  ForeignKeysOffWhileMigrating(const ForeignKeysOffWhileMigrating&) = delete;
  ForeignKeysOffWhileMigrating& operator=(const ForeignKeysOffWhileMigrating&) = delete;

 private:
  Database& db_;
};

void check_foreign_keys(Database& db, std::int64_t version) {
  Statement st(db, "PRAGMA foreign_key_check");
  if (st.step()) {
    refuse("migration to schema version " + std::to_string(version) +
           " left a broken reference in table " + st.column_text(0));
  }
}

}  // namespace

std::span<const std::string_view> builtin_migrations() {
  return detail::kMigrationSql;
}

std::int64_t schema_version() {
  return static_cast<std::int64_t>(builtin_migrations().size());
}

int migrate(Database& db) {
  return migrate(db, builtin_migrations());
}

int migrate(Database& db, std::span<const std::string_view> steps) {
  const auto target = static_cast<std::int64_t>(steps.size());
  check_known(db, db.user_version(), target);
  ForeignKeysOffWhileMigrating keys_off(db);
  int applied = 0;
  for (;;) {
    // Re-read the version under the write lock: another process may have
    // migrated between our read and our BEGIN IMMEDIATE.
    Transaction tx(db);
    const std::int64_t version = db.user_version();
    check_known(db, version, target);
    if (version == target) break;  // tx rolls back: nothing to do
    if (version == 0) {
      if (has_schema_objects(db)) refuse("not a nabla database (tables but no schema version)");
      db.exec("PRAGMA application_id = " + std::to_string(kApplicationId));
    }
    db.exec(steps[static_cast<std::size_t>(version)]);
    check_foreign_keys(db, version + 1);
    db.set_user_version(version + 1);
    tx.commit();
    ++applied;
  }
  return applied;
}

void require_current_schema(Database& db) {
  const std::int64_t version = db.user_version();
  check_known(db, version, schema_version());
  if (version < schema_version()) {
    refuse("database schema version " + std::to_string(version) + " is older than " +
           std::to_string(schema_version()) + "; open it read-write once to migrate");
  }
}

}  // namespace nabla::db
