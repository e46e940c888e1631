#include "nabla/coordinator/history_db.hh"

#include <unistd.h>

#include <filesystem>
#include <stdexcept>

#include "nabla/common/clock.hh"

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

}  // namespace nabla::coordinator
