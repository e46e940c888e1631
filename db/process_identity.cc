#include "nabla/db/process_identity.hh"

#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <sstream>
#include <system_error>

namespace nabla::db {
namespace {

std::optional<std::string> read_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string boot_id() {
  static const std::string kPath = "/proc/sys/kernel/random/boot_id";
  auto text = read_file(kPath);
  if (!text) throw std::system_error(errno, std::generic_category(), "open " + kPath);
  while (!text->empty() && (text->back() == '\n' || text->back() == ' ')) text->pop_back();
  return *text;
}

struct StatFields {
  char state = '?';
  std::int64_t start_ticks = 0;
};

// /proc/<pid>/stat: "pid (comm) state ppid ... starttime(22) ...". comm may
// contain spaces and parentheses, so parse from the last ')'.
std::optional<StatFields> read_stat(pid_t pid) {
  auto text = read_file("/proc/" + std::to_string(pid) + "/stat");
  if (!text) return std::nullopt;
  const auto close = text->rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::istringstream in(text->substr(close + 1));
  StatFields fields;
  in >> fields.state;  // field 3
  std::string skip;
  for (int field = 4; field < 22; ++field) in >> skip;
  in >> fields.start_ticks;  // field 22
  if (!in) return std::nullopt;
  return fields;
}

}  // namespace

ProcessIdentity current_process() {
  const pid_t self = ::getpid();
  auto fields = read_stat(self);
  if (!fields) {
    throw std::system_error(errno != 0 ? errno : EIO, std::generic_category(),
                            "read /proc/" + std::to_string(self) + "/stat");
  }
  return ProcessIdentity{self, fields->start_ticks, boot_id()};
}

std::optional<ProcessIdentity> lookup_process(pid_t pid) {
  if (pid <= 0) return std::nullopt;
  auto fields = read_stat(pid);
  if (!fields || fields->state == 'Z' || fields->state == 'X') return std::nullopt;
  return ProcessIdentity{pid, fields->start_ticks, boot_id()};
}

bool is_alive(const ProcessIdentity& who) {
  auto now = lookup_process(who.pid);
  return now && *now == who;
}

}  // namespace nabla::db
