#include "nabla/db/sqlite.hh"

#include <sqlite3.h>

#include <charconv>
#include <cstdio>
#include <utility>

namespace nabla::db {
namespace {

std::string compose_what(int code, const std::string& message, const std::string& sql) {
  std::string what = message + " (sqlite code " + std::to_string(code) + ")";
  if (!sql.empty()) what += " in: " + sql;
  return what;
}

[[noreturn]] void throw_error(sqlite3* db, int rc, std::string_view sql) {
  // The connection's message is only meaningful when it describes rc.
  std::string message = db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
  if (db != nullptr && sqlite3_extended_errcode(db) != rc &&
      (sqlite3_extended_errcode(db) & 0xff) != (rc & 0xff)) {
    message = sqlite3_errstr(rc);
  }
  throw Error(rc, std::move(message), std::string(sql));
}

}  // namespace

Error::Error(int code, std::string message, std::string sql)
    : std::runtime_error(compose_what(code, message, sql)),
      code_(code),
      message_(std::move(message)),
      sql_(std::move(sql)) {}

// ---------------------------------------------------------------- Database

Database Database::open(const std::string& path, OpenMode mode) {
  int flags = SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE;
  switch (mode) {
    case OpenMode::kReadWriteCreate:
      flags |= SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
      break;
    case OpenMode::kReadWrite:
      flags |= SQLITE_OPEN_READWRITE;
      break;
    case OpenMode::kReadOnly:
      flags |= SQLITE_OPEN_READONLY;
      break;
  }
  sqlite3* raw = nullptr;
  int rc = sqlite3_open_v2(path.c_str(), &raw, flags, nullptr);
  if (rc != SQLITE_OK) {
    std::string message = raw != nullptr ? sqlite3_errmsg(raw) : sqlite3_errstr(rc);
    sqlite3_close_v2(raw);  // a handle is returned even on most failures
    throw Error(rc, message + " opening '" + path + "'", "sqlite3_open_v2");
  }
  Database db(raw, mode == OpenMode::kReadOnly);
  sqlite3_extended_result_codes(raw, 1);
  // Defensive mode: user SQL (`nabla sql`) cannot corrupt the file through
  // writable_schema, journal_mode=OFF or similar.
  rc = sqlite3_db_config(raw, SQLITE_DBCONFIG_DEFENSIVE, 1, nullptr);
  if (rc != SQLITE_OK) throw_error(raw, rc, "sqlite3_db_config(SQLITE_DBCONFIG_DEFENSIVE)");
  rc = sqlite3_busy_timeout(raw, kBusyTimeoutMs);
  if (rc != SQLITE_OK) throw_error(raw, rc, "sqlite3_busy_timeout");
  db.exec("PRAGMA foreign_keys = ON");
  if (!db.read_only_) {
    // journal_mode is persistent in the file; WAL lets `nabla sql` read while
    // a run writes. synchronous is per connection.
    Statement wal(db, "PRAGMA journal_mode = WAL");
    if (!wal.step() || wal.column_text(0) != "wal") {
      throw Error(SQLITE_ERROR, "could not switch '" + path + "' to WAL", wal.sql());
    }
    db.exec("PRAGMA synchronous = NORMAL");
  }
  return db;
}

Database::Database(Database&& other) noexcept
    : db_(std::exchange(other.db_, nullptr)), read_only_(other.read_only_) {}

Database& Database::operator=(Database&& other) noexcept {
  if (this != &other) {
    sqlite3_close_v2(db_);
    db_ = std::exchange(other.db_, nullptr);
    read_only_ = other.read_only_;
  }
  return *this;
}

Database::~Database() {
  // close_v2 defers the close until outstanding statements are finalized,
  // so destruction order between a Database and its Statements is harmless.
  sqlite3_close_v2(db_);
}

void Database::exec(std::string_view sql) {
  std::string text(sql);
  char* message = nullptr;
  int rc = sqlite3_exec(db_, text.c_str(), nullptr, nullptr, &message);
  if (rc != SQLITE_OK) {
    std::string msg = message != nullptr ? message : sqlite3_errstr(rc);
    sqlite3_free(message);
    throw Error(sqlite3_extended_errcode(db_), std::move(msg), std::move(text));
  }
}

Statement Database::prepare(std::string_view sql) {
  return Statement(*this, sql);
}

std::int64_t Database::last_insert_rowid() const {
  return sqlite3_last_insert_rowid(db_);
}

std::int64_t Database::changes() const {
  return sqlite3_changes64(db_);
}

bool Database::in_transaction() const {
  return sqlite3_get_autocommit(db_) == 0;
}

std::int64_t Database::user_version() {
  Statement st(*this, "PRAGMA user_version");
  st.step();
  return st.column_int64(0);
}

void Database::set_user_version(std::int64_t version) {
  // PRAGMA takes no parameters; the value is an integer we format ourselves.
  exec("PRAGMA user_version = " + std::to_string(version));
}

// ---------------------------------------------------------------- Statement

Statement::Statement(Database& db, std::string_view sql) : db_(db.handle()) {
  const char* tail = nullptr;
  int rc = sqlite3_prepare_v3(db_, sql.data(), static_cast<int>(sql.size()),
                              SQLITE_PREPARE_PERSISTENT, &stmt_, &tail);
  if (rc != SQLITE_OK) throw_error(db_, rc, sql);
  if (stmt_ == nullptr) throw Error(SQLITE_MISUSE, "empty statement", std::string(sql));
  // Only whitespace and comments may follow (they prepare to no statement):
  // a second statement would otherwise be silently ignored.
  const std::string_view rest = sql.substr(static_cast<std::size_t>(tail - sql.data()));
  if (!rest.empty()) {
    sqlite3_stmt* next = nullptr;
    rc = sqlite3_prepare_v2(db_, rest.data(), static_cast<int>(rest.size()), &next, nullptr);
    sqlite3_finalize(next);
    if (rc != SQLITE_OK || next != nullptr) {
      sqlite3_finalize(std::exchange(stmt_, nullptr));
      throw Error(SQLITE_MISUSE, "one statement expected, found more", std::string(sql));
    }
  }
}

Statement::Statement(Statement&& other) noexcept
    : db_(other.db_), stmt_(std::exchange(other.stmt_, nullptr)) {}

Statement& Statement::operator=(Statement&& other) noexcept {
  if (this != &other) {
    sqlite3_finalize(stmt_);
    db_ = other.db_;
    stmt_ = std::exchange(other.stmt_, nullptr);
  }
  return *this;
}

Statement::~Statement() {
  sqlite3_finalize(stmt_);
}

void Statement::check_bind(int rc, int index) {
  if (rc == SQLITE_OK) return;
  Error e(rc, std::string(sqlite3_errstr(rc)) + " binding parameter " + std::to_string(index),
          sql());
  throw e;
}

Statement& Statement::bind_int64(int index, std::int64_t value) {
  check_bind(sqlite3_bind_int64(stmt_, index, value), index);
  return *this;
}

Statement& Statement::bind(int index, double value) {
  check_bind(sqlite3_bind_double(stmt_, index, value), index);
  return *this;
}

Statement& Statement::bind(int index, std::string_view value) {
  check_bind(
      sqlite3_bind_text64(stmt_, index, value.data(), value.size(), SQLITE_TRANSIENT, SQLITE_UTF8),
      index);
  return *this;
}

Statement& Statement::bind(int index, std::span<const std::uint8_t> blob) {
  // A null pointer would bind NULL; an empty blob must stay a zero-length BLOB.
  static const std::uint8_t kEmpty = 0;
  const void* data = blob.empty() ? &kEmpty : blob.data();
  check_bind(sqlite3_bind_blob64(stmt_, index, data, blob.size(), SQLITE_TRANSIENT), index);
  return *this;
}

Statement& Statement::bind(int index, std::nullptr_t) {
  check_bind(sqlite3_bind_null(stmt_, index), index);
  return *this;
}

Statement& Statement::bind(int index, const Value& value) {
  return std::visit(
      [&](const auto& v) -> Statement& {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, std::monostate>) {
          return bind(index, nullptr);
        } else if constexpr (std::is_same_v<T, std::string>) {
          return bind(index, std::string_view(v));
        } else {
          return bind(index, v);
        }
      },
      value);
}

int Statement::parameter_index(std::string_view name) const {
  std::string key(name);
  int index = sqlite3_bind_parameter_index(stmt_, key.c_str());
  if (index == 0) throw Error(SQLITE_RANGE, "no parameter named '" + key + "'", sql());
  return index;
}

void Statement::clear_bindings() {
  sqlite3_clear_bindings(stmt_);
}

bool Statement::step() {
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  // After a failed step the statement must be reset before reuse; reset
  // returns the same error code, which we ignore here.
  std::string text = sql();
  sqlite3_reset(stmt_);
  throw_error(db_, rc, text);
}

void Statement::run() {
  while (step()) {
  }
  reset();
}

void Statement::reset() {
  sqlite3_reset(stmt_);
}

int Statement::column_count() const {
  return sqlite3_column_count(stmt_);
}

std::string Statement::column_name(int column) const {
  const char* name = sqlite3_column_name(stmt_, column);
  return name != nullptr ? name : "";
}

bool Statement::column_is_null(int column) const {
  return sqlite3_column_type(stmt_, column) == SQLITE_NULL;
}

void Statement::throw_mismatch(int column, const char* wanted) const {
  static constexpr const char* kNames[] = {"?", "INTEGER", "REAL", "TEXT", "BLOB", "NULL"};
  int type = sqlite3_column_type(stmt_, column);
  throw Error(SQLITE_MISMATCH,
              "column " + std::to_string(column) + " ('" + column_name(column) + "') is " +
                  kNames[type >= 1 && type <= 5 ? type : 0] + ", wanted " + wanted,
              sql());
}

std::int64_t Statement::column_int64(int column) const {
  if (sqlite3_column_type(stmt_, column) != SQLITE_INTEGER) throw_mismatch(column, "INTEGER");
  return sqlite3_column_int64(stmt_, column);
}

double Statement::column_double(int column) const {
  int type = sqlite3_column_type(stmt_, column);
  if (type != SQLITE_FLOAT && type != SQLITE_INTEGER) throw_mismatch(column, "REAL");
  return sqlite3_column_double(stmt_, column);
}

std::string Statement::column_text(int column) const {
  if (sqlite3_column_type(stmt_, column) != SQLITE_TEXT) throw_mismatch(column, "TEXT");
  const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(stmt_, column));
  return std::string(text, static_cast<std::size_t>(sqlite3_column_bytes(stmt_, column)));
}

Blob Statement::column_blob(int column) const {
  if (sqlite3_column_type(stmt_, column) != SQLITE_BLOB) throw_mismatch(column, "BLOB");
  const auto* data = static_cast<const std::uint8_t*>(sqlite3_column_blob(stmt_, column));
  return Blob(data, data + sqlite3_column_bytes(stmt_, column));
}

std::optional<std::int64_t> Statement::optional_int64(int column) const {
  if (column_is_null(column)) return std::nullopt;
  return column_int64(column);
}

std::optional<double> Statement::optional_double(int column) const {
  if (column_is_null(column)) return std::nullopt;
  return column_double(column);
}

std::optional<std::string> Statement::optional_text(int column) const {
  if (column_is_null(column)) return std::nullopt;
  return column_text(column);
}

Value Statement::column_value(int column) const {
  switch (sqlite3_column_type(stmt_, column)) {
    case SQLITE_INTEGER:
      return sqlite3_column_int64(stmt_, column);
    case SQLITE_FLOAT:
      return sqlite3_column_double(stmt_, column);
    case SQLITE_TEXT:
      return column_text(column);
    case SQLITE_BLOB:
      return column_blob(column);
    default:
      return std::monostate{};
  }
}

std::string Statement::sql() const {
  const char* text = stmt_ != nullptr ? sqlite3_sql(stmt_) : nullptr;
  return text != nullptr ? text : "";
}

// ---------------------------------------------------------------- Transaction

Transaction::Transaction(Database& db) : db_(&db), nested_(db.in_transaction()) {
  db_->exec(nested_ ? "SAVEPOINT nabla_tx" : "BEGIN IMMEDIATE");
}

Transaction::~Transaction() {
  if (done_) return;
  // Never throw from here; a failed rollback (e.g. SQLite already rolled back
  // after an I/O error) leaves nothing more to undo.
  const char* undo = nested_ ? "ROLLBACK TO nabla_tx; RELEASE nabla_tx" : "ROLLBACK";
  sqlite3_exec(db_->handle(), undo, nullptr, nullptr, nullptr);
}

void Transaction::commit() {
  db_->exec(nested_ ? "RELEASE nabla_tx" : "COMMIT");
  done_ = true;
}

// ---------------------------------------------------------------- query()

QueryResult query(Database& db, std::string_view sql) {
  return query(db, sql, {});
}

QueryResult query(Database& db, std::string_view sql, std::span<const Value> params) {
  Statement st(db, sql);
  for (std::size_t i = 0; i < params.size(); ++i) st.bind(static_cast<int>(i + 1), params[i]);
  QueryResult result;
  const int n = st.column_count();
  for (int c = 0; c < n; ++c) result.columns.push_back(st.column_name(c));
  while (st.step()) {
    std::vector<Value> row;
    row.reserve(static_cast<std::size_t>(n));
    for (int c = 0; c < n; ++c) row.push_back(st.column_value(c));
    result.rows.push_back(std::move(row));
  }
  return result;
}

std::string to_string(const Value& value) {
  struct Render {
    std::string operator()(std::monostate) const { return "NULL"; }
    std::string operator()(std::int64_t v) const { return std::to_string(v); }
    std::string operator()(double v) const {
      char buf[32];
      auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
      return ec == std::errc() ? std::string(buf, end) : "nan";
    }
    std::string operator()(const std::string& v) const { return v; }
    std::string operator()(const Blob& v) const {
      static constexpr char kHex[] = "0123456789abcdef";
      std::string out = "x'";
      for (std::uint8_t b : v) {
        out += kHex[b >> 4];
        out += kHex[b & 0xf];
      }
      return out + "'";
    }
  };
  return std::visit(Render{}, value);
}

}  // namespace nabla::db
