#pragma once
// Opening the run history for the commands that only read it (`nabla runs`,
// `nabla sql`, `nabla predict`). None of them creates a database: a missing
// file is an error naming it and the flag. And storing the finished result
// of a command that computes before it stores (`nabla accel`, `nabla memlat`).
#include <cstdint>
#include <functional>
#include <string>

#include "nabla/db/store.hh"

namespace nabla::coordinator {

// Throws std::runtime_error "no database at 'PATH' (give --db FILE)".
void require_history_database(const std::string& path);

// Read-write when the file is writable, so that runs whose process died are
// marked `failed` before they are read (db/store.hh); read-only otherwise.
db::Store open_history_for_reading(const std::string& path);

// Read-only: no query can change or corrupt a stored run.
db::Store open_history_read_only(const std::string& path);

// Stores a finished run in one transaction, creating the database if need
// be: the run row (`start`; owner and tool version filled in), the rows
// `add_rows` writes for it, and its end, complete. Returns the run's id. A
// failure stores nothing.
std::int64_t store_finished_run(
    const std::string& path, db::RunStart start, std::int64_t ended_ns,
    const std::function<void(db::Store&, std::int64_t run_id)>& add_rows);

}  // namespace nabla::coordinator
