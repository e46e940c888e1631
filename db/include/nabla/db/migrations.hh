#pragma once
// Forward-only schema migrations keyed by `PRAGMA user_version`.
//
// Step i takes user_version i to i + 1: step 0 is db/schema.sql (an empty
// file becomes schema v1), later steps are db/migrations/NNNN_<what>.sql,
// all compiled into the library. Each step runs in its own BEGIN IMMEDIATE
// transaction together with the user_version bump, so a crash mid-migration
// leaves the previous version intact. There are no down-migrations: a
// database with a newer version than this binary knows is refused.
#include <cstdint>
#include <span>
#include <string_view>

#include "nabla/db/sqlite.hh"

namespace nabla::db {

// 'nabl' in the file header (PRAGMA application_id), set by the first step.
inline constexpr std::int64_t kApplicationId = 0x6e61626c;

// The schema version this binary writes and reads.
std::int64_t schema_version();

// The built-in steps (index i: version i -> i + 1).
std::span<const std::string_view> builtin_migrations();

// Brings `db` to the newest version. Returns the number of steps applied.
// Throws db::Error when the database is newer than the binary, when a
// non-empty database has no nabla version (not a nabla file), or when a step
// fails (that step is rolled back; earlier steps stay applied).
int migrate(Database& db);
int migrate(Database& db, std::span<const std::string_view> steps);

// For read-only opens: throws unless `db` is exactly at schema_version().
void require_current_schema(Database& db);

}  // namespace nabla::db
