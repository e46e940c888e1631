#pragma once
// cgroup v2 ids → paths, and the processes of a cgroup. sock_diag reports a
// socket's cgroup id (INET_DIAG_CGROUP_ID, the inode of the cgroup's
// directory); the path names the service or container, and its cgroup.procs
// lists the processes that may own the socket. The id is resolved with
// open_by_handle_at on the cgroup2 mount (the kernel's file handle of a
// cgroup directory is its id; needs CAP_DAC_READ_SEARCH, which the sniffer
// holds for /proc anyway); paths are cached.
#include <sys/types.h>

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "nabla/common/fd.hh"

namespace nabla::sniffer {

// The mount point of the cgroup2 hierarchy in a /proc/self/mountinfo text,
// e.g. "/sys/fs/cgroup" (unified) or "/sys/fs/cgroup/unified" (hybrid); ""
// when there is none.
std::string cgroup2_mount(std::string_view mountinfo);

class Cgroups {
 public:
  // `mount`: the cgroup2 mount point; "" finds it in /proc/self/mountinfo.
  explicit Cgroups(std::string mount = {});

  // The cgroup's path below the mount ("/system.slice/x.service"), as
  // /proc/PID/cgroup writes it; "" when unknown (no cgroup2, a removed
  // cgroup, no permission).
  const std::string& path(uint64_t cgroup_id);
  // The processes in the cgroup at `path` (its cgroup.procs); empty when
  // unreadable.
  std::vector<pid_t> processes(const std::string& path) const;
  const std::string& mount() const { return mount_; }

 private:
  std::string mount_;
  common::FileDescriptor mount_fd_;
  std::unordered_map<uint64_t, std::string> paths_;
};

}  // namespace nabla::sniffer
