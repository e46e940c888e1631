#pragma once
// One statement of the user's own SQL (`nabla sql`), which may only read and
// is bounded in memory and time (docs/security.md, "nabla sql").
//
// On top of the read-only connection (OpenMode::kReadOnly) and defensive
// mode (db/sqlite.hh), for the statement's life:
//   - an authorizer allows only SELECT, column reads, functions, recursive
//     common table expressions and a list of pragmas that only read; every
//     other action is refused when the statement is prepared, before it
//     runs: ATTACH (and so VACUUM INTO, which attaches its target first),
//     DETACH, INSERT, UPDATE, DELETE, CREATE, DROP, ALTER, transactions,
//     savepoints, ANALYZE, REINDEX, and any pragma that sets a value;
//   - PRAGMA query_only = 1, and temp_store = MEMORY so a runaway sort
//     meets the memory limit instead of filling the disk with temp files;
//   - sqlite3_limit: no attached database, SQL text of at most 1 MiB, one
//     value (string or blob) of at most a quarter of the memory limit;
//   - sqlite3_hard_heap_limit64(memory_bytes), the previous limit restored
//     after; the rows gathered for printing count against memory_bytes too;
//   - a progress handler that interrupts the statement after timeout_ns.
// A refusal or a limit reached throws UserQueryError, one line saying which;
// other SQL errors (syntax, no such table) throw db::Error as before.
#include <cstdint>
#include <stdexcept>
#include <string_view>

#include "nabla/db/sqlite.hh"

namespace nabla::db {

struct UserQueryLimits {
  std::int64_t memory_bytes = std::int64_t{256} << 20;
  std::int64_t timeout_ns = std::int64_t{600} * 1'000'000'000;  // 0: no time limit
};

class UserQueryError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

QueryResult user_query(Database& db, std::string_view sql, const UserQueryLimits& limits);

}  // namespace nabla::db
