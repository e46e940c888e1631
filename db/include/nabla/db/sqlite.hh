#pragma once
// RAII wrapper over the SQLite C API: Database (one connection), Statement
// (one prepared statement), Transaction (BEGIN IMMEDIATE, rolled back unless
// committed) and a generic query() that returns rows as variants.
//
// Threading: a Database is opened with SQLITE_OPEN_NOMUTEX, so one connection
// must be used by one thread at a time (open one Database per thread).
// Errors: every failing SQLite call throws db::Error carrying the SQLite
// (extended) result code, SQLite's message and the SQL text that failed.
#include <concepts>
#include <cstdint>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

struct sqlite3;
struct sqlite3_stmt;

namespace nabla::db {

// One column value. The alternatives follow SQLite's storage classes:
// NULL, INTEGER, REAL, TEXT, BLOB.
using Blob = std::vector<std::uint8_t>;
using Value = std::variant<std::monostate, std::int64_t, double, std::string, Blob>;

// The rows of one query, for `nabla sql` and `nabla runs show`.
struct QueryResult {
  std::vector<std::string> columns;
  std::vector<std::vector<Value>> rows;
};

class Error : public std::runtime_error {
 public:
  // `what()` reads "<message> (sqlite code N) in: <sql>".
  Error(int code, std::string message, std::string sql);

  int code() const { return code_; }
  const std::string& message() const { return message_; }
  const std::string& sql() const { return sql_; }

 private:
  int code_;
  std::string message_;
  std::string sql_;
};

enum class OpenMode {
  kReadWriteCreate,  // creates the file; sets journal_mode=WAL, synchronous=NORMAL
  kReadWrite,        // the file must exist
  kReadOnly,         // for `nabla sql`: writes fail with SQLITE_READONLY
};

class Statement;

class Database {
 public:
  static constexpr int kBusyTimeoutMs = 5000;

  // Opens `path` and applies the connection pragmas: foreign_keys=ON,
  // busy_timeout=kBusyTimeoutMs, and for writable modes journal_mode=WAL and
  // synchronous=NORMAL (durable up to the last checkpointed commit, never
  // corrupt; the right trade for measurement data).
  static Database open(const std::string& path, OpenMode mode = OpenMode::kReadWriteCreate);

  Database(Database&& other) noexcept;
  Database& operator=(Database&& other) noexcept;
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;
  ~Database();

  // Runs one or more statements that return no rows of interest.
  void exec(std::string_view sql);
  Statement prepare(std::string_view sql);

  std::int64_t last_insert_rowid() const;
  std::int64_t changes() const;
  bool read_only() const { return read_only_; }
  bool in_transaction() const;

  std::int64_t user_version();
  void set_user_version(std::int64_t version);

  sqlite3* handle() const { return db_; }

 private:
  Database(sqlite3* db, bool read_only) : db_(db), read_only_(read_only) {}

  sqlite3* db_ = nullptr;
  bool read_only_ = false;
};

// A prepared statement. Parameter indexes are 1-based, column indexes
// 0-based, as in SQLite. The SQL must hold exactly one statement (trailing
// whitespace and comments are fine); use Database::exec for scripts.
class Statement {
 public:
  Statement(Database& db, std::string_view sql);
  Statement(Statement&& other) noexcept;
  Statement& operator=(Statement&& other) noexcept;
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  ~Statement();

  template <std::integral T>
  Statement& bind(int index, T value) {
    return bind_int64(index, static_cast<std::int64_t>(value));
  }
  Statement& bind(int index, double value);
  Statement& bind(int index, std::string_view value);
  Statement& bind(int index, const char* value) { return bind(index, std::string_view(value)); }
  Statement& bind(int index, const std::string& value) {
    return bind(index, std::string_view(value));
  }
  Statement& bind(int index, std::span<const std::uint8_t> blob);
  Statement& bind(int index, const Blob& blob) {
    return bind(index, std::span<const std::uint8_t>(blob));
  }
  Statement& bind(int index, std::nullptr_t);
  Statement& bind(int index, const Value& value);
  template <typename T>
  Statement& bind(int index, const std::optional<T>& value) {
    if (value) return bind(index, *value);
    return bind(index, nullptr);
  }
  // Named parameters (":name", "@name", "$name"; the prefix is part of the
  // name). An unknown name throws.
  template <typename T>
  Statement& bind(std::string_view name, const T& value) {
    return bind(parameter_index(name), value);
  }
  int parameter_index(std::string_view name) const;
  void clear_bindings();

  // Advances: true when a row is available, false when the statement is done.
  bool step();
  // Steps to completion, discarding rows, then resets (bindings are kept).
  void run();
  // Ready to step again; bindings are kept.
  void reset();

  int column_count() const;
  std::string column_name(int column) const;
  bool column_is_null(int column) const;
  // Typed getters throw db::Error (SQLITE_MISMATCH) when the stored type
  // differs: column_int64 wants INTEGER; column_double takes REAL or INTEGER;
  // column_text wants TEXT; column_blob wants BLOB. NULL is always a mismatch
  // for these; use the optional_* forms for nullable columns.
  std::int64_t column_int64(int column) const;
  double column_double(int column) const;
  std::string column_text(int column) const;
  Blob column_blob(int column) const;
  std::optional<std::int64_t> optional_int64(int column) const;
  std::optional<double> optional_double(int column) const;
  std::optional<std::string> optional_text(int column) const;
  Value column_value(int column) const;

  std::string sql() const;
  sqlite3_stmt* handle() const { return stmt_; }

 private:
  Statement& bind_int64(int index, std::int64_t value);
  void check_bind(int rc, int index);
  [[noreturn]] void throw_mismatch(int column, const char* wanted) const;

  sqlite3* db_ = nullptr;
  sqlite3_stmt* stmt_ = nullptr;
};

// BEGIN IMMEDIATE on construction (takes the write lock up front, so a busy
// database fails here, within busy_timeout, not half-way through), ROLLBACK in
// the destructor unless commit() was called. The destructor never throws.
// Nested inside an open transaction it becomes a SAVEPOINT: commit() releases
// it into the outer transaction, destruction rolls back only its own work.
class Transaction {
 public:
  explicit Transaction(Database& db);
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  ~Transaction();

  void commit();

 private:
  Database* db_;
  bool nested_ = false;
  bool done_ = false;
};

// Runs exactly one statement (a trailing ";", whitespace or comments are fine;
// a second statement is an error) and returns its columns and every row.
QueryResult query(Database& db, std::string_view sql);
QueryResult query(Database& db, std::string_view sql, std::span<const Value> params);

// Renders a value for tables and CSV: NULL as "NULL", REAL with up to 17
// significant digits, BLOB as x'hex'.
std::string to_string(const Value& value);

}  // namespace nabla::db
