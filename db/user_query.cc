#include "nabla/db/user_query.hh"

#include <sqlite3.h>
#include <strings.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <string>

namespace nabla::db {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int kMaxSqlBytes = 1 << 20;

// Pragmas that only read. The first take a table or index name as their
// argument; the others are allowed only without one (with one they set).
constexpr const char* kPragmasWithName[] = {
    "table_info",  "table_xinfo",      "table_list",        "index_list",      "index_info",
    "index_xinfo", "foreign_key_list", "foreign_key_check", "integrity_check", "quick_check"};
constexpr const char* kPragmasBare[] = {
    "user_version",   "schema_version", "application_id", "page_count",      "page_size",
    "freelist_count", "encoding",       "journal_mode",   "compile_options", "collation_list",
    "database_list",  "function_list",  "module_list",    "pragma_list",     "data_version",
    "query_only",     "foreign_keys"};

template <std::size_t N>
bool listed(const char* const (&list)[N], const char* name) {
  return name != nullptr && std::any_of(std::begin(list), std::end(list),
                                        [&](const char* p) { return ::strcasecmp(p, name) == 0; });
}

std::string named(const char* what, const char* name) {
  return name != nullptr ? std::string(what) + " " + name : std::string(what);
}

// What an authorizer action does, in the words of the refusal.
std::string describe_action(int action, const char* a, const char* b) {
  switch (action) {
    case SQLITE_ATTACH:
      return "ATTACH (and VACUUM INTO, which attaches its target file)";
    case SQLITE_DETACH:
      return "DETACH";
    case SQLITE_INSERT:
      return named("INSERT into", a);
    case SQLITE_UPDATE:
      return named("UPDATE of", a);
    case SQLITE_DELETE:
      return named("DELETE from", a);
    case SQLITE_TRANSACTION:
    case SQLITE_SAVEPOINT:
      return "a transaction or savepoint";
    case SQLITE_PRAGMA:
      return b != nullptr ? std::string("PRAGMA ") + (a ? a : "") + " = " + b : named("PRAGMA", a);
    case SQLITE_ALTER_TABLE:
      return "ALTER TABLE";
    case SQLITE_ANALYZE:
      return "ANALYZE";
    case SQLITE_REINDEX:
      return "REINDEX";
    default:
      // CREATE_* (2..9, 29, 30) and DROP_* (10..17, 31, 32 in the docs' list).
      return "changing the schema or the data (SQLite action " + std::to_string(action) + ")";
  }
}

struct Guard {
  std::string refused;  // the first action the authorizer refused
  Clock::time_point deadline = Clock::time_point::max();
  bool timed_out = false;
};

int authorize(void* user, int action, const char* a, const char* b, const char*, const char*) {
  auto* guard = static_cast<Guard*>(user);
  switch (action) {
    case SQLITE_SELECT:
    case SQLITE_READ:
    case SQLITE_FUNCTION:
    case SQLITE_RECURSIVE:
      return SQLITE_OK;
    case SQLITE_PRAGMA:
      if (listed(kPragmasWithName, a) || (b == nullptr && listed(kPragmasBare, a))) {
        return SQLITE_OK;
      }
      break;
    default:
      break;
  }
  if (guard->refused.empty()) guard->refused = describe_action(action, a, b);
  return SQLITE_DENY;
}

int progress(void* user) {
  auto* guard = static_cast<Guard*>(user);
  if (Clock::now() < guard->deadline) return 0;
  guard->timed_out = true;
  return 1;  // SQLITE_INTERRUPT
}

// Installs the authorizer, progress handler, limits and heap limit; takes
// the first two off again and restores the heap limit on destruction.
class Restrictions {
 public:
  Restrictions(Database& db, Guard& guard, const UserQueryLimits& limits) : db_(db.handle()) {
    // The pragmas first: the authorizer would refuse them.
    db.exec("PRAGMA query_only = 1");
    db.exec("PRAGMA temp_store = MEMORY");
    const std::int64_t value_cap =
        std::clamp<std::int64_t>(limits.memory_bytes / 4, 1024, 1'000'000'000);
    sqlite3_limit(db_, SQLITE_LIMIT_ATTACHED, 0);
    sqlite3_limit(db_, SQLITE_LIMIT_SQL_LENGTH, kMaxSqlBytes);
    sqlite3_limit(db_, SQLITE_LIMIT_LENGTH, static_cast<int>(value_cap));
    sqlite3_limit(db_, SQLITE_LIMIT_WORKER_THREADS, 0);
    previous_heap_limit_ = sqlite3_hard_heap_limit64(limits.memory_bytes);
    sqlite3_set_authorizer(db_, authorize, &guard);
    if (limits.timeout_ns > 0) {
      guard.deadline = Clock::now() + std::chrono::nanoseconds(limits.timeout_ns);
      sqlite3_progress_handler(db_, 10'000, progress, &guard);
    }
  }
  ~Restrictions() {
    sqlite3_set_authorizer(db_, nullptr, nullptr);
    sqlite3_progress_handler(db_, 0, nullptr, nullptr);
    sqlite3_hard_heap_limit64(previous_heap_limit_);
  }
  Restrictions(const Restrictions&) = delete;
  Restrictions& operator=(const Restrictions&) = delete;

 private:
  sqlite3* db_;
  sqlite3_int64 previous_heap_limit_ = 0;
};

std::string mib(std::int64_t bytes) {
  return std::to_string(bytes >> 20) + " MiB";
}

std::int64_t size_of(const Value& v) {
  std::int64_t n = sizeof(Value);
  if (const auto* s = std::get_if<std::string>(&v)) n += static_cast<std::int64_t>(s->capacity());
  if (const auto* b = std::get_if<Blob>(&v)) n += static_cast<std::int64_t>(b->capacity());
  return n;
}

}  // namespace

QueryResult user_query(Database& db, std::string_view sql, const UserQueryLimits& limits) {
  if (sql.size() > kMaxSqlBytes) {
    throw UserQueryError("the SQL text is longer than " + mib(kMaxSqlBytes));
  }
  Guard guard;
  Restrictions restrictions(db, guard, limits);
  QueryResult result;
  try {
    Statement st(db, sql);
    const int n = st.column_count();
    for (int c = 0; c < n; ++c) result.columns.push_back(st.column_name(c));
    std::int64_t held = 0;
    while (st.step()) {
      std::vector<Value> row;
      row.reserve(static_cast<std::size_t>(n));
      held += static_cast<std::int64_t>(sizeof row);
      for (int c = 0; c < n; ++c) {
        row.push_back(st.column_value(c));
        held += size_of(row.back());
      }
      if (held > limits.memory_bytes) {
        throw UserQueryError("the result holds more than " + mib(limits.memory_bytes) +
                             " (--max-memory) after " + std::to_string(result.rows.size()) +
                             " rows; add a LIMIT or aggregate");
      }
      result.rows.push_back(std::move(row));
    }
  } catch (const Error& e) {
    const int code = e.code() & 0xff;
    // The authorizer's refusal comes back as "not authorized", with
    // SQLITE_AUTH or, for schema changes, another code: what it refused
    // is the word.
    if (code == SQLITE_AUTH || !guard.refused.empty()) {
      throw UserQueryError(
          "read-only: " + (guard.refused.empty() ? std::string("statement") : guard.refused) +
          " is not allowed");
    }
    if (code == SQLITE_INTERRUPT && guard.timed_out) {
      throw UserQueryError("the query ran longer than " +
                           std::to_string(limits.timeout_ns / 1'000'000'000) +
                           " s (--timeout) and was stopped");
    }
    if (code == SQLITE_NOMEM) {
      throw UserQueryError("the query needs more than " + mib(limits.memory_bytes) +
                           " of memory (--max-memory) and was stopped");
    }
    if (code == SQLITE_TOOBIG) {
      throw UserQueryError("a string or blob grew past " +
                           std::to_string(sqlite3_limit(db.handle(), SQLITE_LIMIT_LENGTH, -1)) +
                           " bytes (a quarter of --max-memory) and the query was stopped");
    }
    if (code == SQLITE_READONLY) {
      throw UserQueryError("read-only: the statement would write and is not allowed");
    }
    throw;
  }
  return result;
}

}  // namespace nabla::db
