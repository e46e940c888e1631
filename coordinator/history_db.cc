#include "nabla/coordinator/history_db.hh"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <stdexcept>

#include "nabla/common/clock.hh"
#include "nabla/common/version.hh"

namespace nabla::coordinator {

void require_history_database(const std::string& path) {
  if (!std::filesystem::exists(path)) {
    throw std::runtime_error("no database at '" + path + "' (give --db FILE)");
  }
}

db::Store open_history_for_reading(const std::string& path) {
  require_history_database(path);
  if (::access(path.c_str(), W_OK) == 0) return db::Store::open(path, common::realtime_ns());
  return db::Store::open_read_only(path);
}

db::Store open_history_read_only(const std::string& path) {
  require_history_database(path);
  return db::Store::open_read_only(path);
}

std::int64_t store_finished_run(
    const std::string& path, db::RunStart start, std::int64_t ended_ns,
    const std::function<void(db::Store&, std::int64_t run_id)>& add_rows) {
  db::Store store = db::Store::open(path, common::realtime_ns());
  db::Transaction tx(store.database());
  start.tool_version = common::nabla_version();
  const std::int64_t run_id = store.begin_run(start);
  add_rows(store, run_id);
  store.finish_run(run_id, db::RunStatus::kComplete, std::max(ended_ns, start.started_ns));
  tx.commit();
  return run_id;
}

}  // namespace nabla::coordinator
