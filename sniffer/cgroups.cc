// cgroup ids and their processes; see cgroups.hh.
#include "nabla/sniffer/cgroups.hh"

#include <fcntl.h>
#include <unistd.h>

#include <charconv>
#include <cstring>
#include <fstream>
#include <sstream>

#include "nabla/common/text_file.hh"

namespace nabla::sniffer {
namespace {

// The kernel's file handle type for kernfs (cgroup) nodes (FILEID_KERNFS).
constexpr int kKernfsHandle = 0xfe;

}  // namespace

std::string cgroup2_mount(std::string_view mountinfo) {
  // "ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS... - FSTYPE SOURCE SUPER"
  std::istringstream lines{std::string(mountinfo)};
  for (std::string line; std::getline(lines, line);) {
    const size_t dash = line.find(" - ");
    if (dash == std::string::npos || line.compare(dash + 3, 8, "cgroup2 ") != 0) continue;
    std::istringstream fields(line.substr(0, dash));
    std::string id, parent, dev, root, point;
    if (fields >> id >> parent >> dev >> root >> point) return point;
  }
  return {};
}

Cgroups::Cgroups(std::string mount) : mount_(std::move(mount)) {
  if (mount_.empty()) {
    try {
      mount_ = cgroup2_mount(common::read_text_file("/proc/self/mountinfo"));
    } catch (const std::exception&) {
      mount_.clear();
    }
  }
  if (!mount_.empty()) {
    mount_fd_ = common::FileDescriptor(::open(mount_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  }
}

const std::string& Cgroups::path(uint64_t cgroup_id) {
  static const std::string kUnknown;
  if (cgroup_id == 0 || !mount_fd_.valid()) return kUnknown;
  if (const auto it = paths_.find(cgroup_id); it != paths_.end()) return it->second;
  alignas(file_handle) unsigned char buf[sizeof(file_handle) + sizeof cgroup_id] = {};
  auto* handle = reinterpret_cast<file_handle*>(buf);
  handle->handle_bytes = sizeof cgroup_id;
  handle->handle_type = kKernfsHandle;
  std::memcpy(buf + sizeof(file_handle), &cgroup_id, sizeof cgroup_id);
  const common::FileDescriptor dir(
      ::open_by_handle_at(mount_fd_.get(), handle, O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dir.valid()) return kUnknown;  // not cached: the cgroup may appear later
  char link[64];
  char target[4096];
  std::snprintf(link, sizeof link, "/proc/self/fd/%d", dir.get());
  const ssize_t n = ::readlink(link, target, sizeof target);
  if (n <= 0 || static_cast<size_t>(n) >= sizeof target) return kUnknown;
  std::string_view full(target, static_cast<size_t>(n));
  if (full.substr(0, mount_.size()) == mount_) full.remove_prefix(mount_.size());
  std::string below(full.empty() ? std::string_view("/") : full);
  return paths_.insert_or_assign(cgroup_id, std::move(below)).first->second;
}

std::vector<pid_t> Cgroups::processes(const std::string& path) const {
  std::vector<pid_t> pids;
  if (mount_.empty() || path.empty()) return pids;
  std::ifstream in(mount_ + (path == "/" ? "" : path) + "/cgroup.procs");
  for (pid_t pid = 0; in >> pid;) pids.push_back(pid);
  return pids;
}

}  // namespace nabla::sniffer
