#pragma once
// Socket inode → owning process, from /proc/<pid>/fd/* links "socket:[N]".
// One scan walks every process once (what `ss -p` does too); buffers are
// reused across scans. A socket shared by several processes (fork) maps to
// the lowest pid. Processes that vanish mid-scan are skipped silently.
#include <sys/types.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>

namespace nabla::sniffer {

struct ProcessInfo {
  pid_t pid = 0;
  std::string comm;  // /proc/<pid>/comm without the newline
};

class ProcMap {
 public:
  // `proc_root` is "/proc" except in tests.
  explicit ProcMap(std::string proc_root = "/proc");

  // Rebuilds the inode map. Returns the number of socket fds found.
  size_t scan();
  // Adds the sockets opened since the last scan by processes that owned
  // sockets then (a cheap partial scan, e.g. for a connection conntrack just
  // reported). Returns the number of inodes added.
  size_t rescan_known();
  // The owner of a socket inode from the last scan, or nullptr.
  const ProcessInfo* find(uint64_t inode) const;
  size_t processes_scanned() const { return processes_; }

 private:
  bool scan_fds(int proc_dirfd, pid_t pid);  // true if the process owns a socket

  std::string root_;
  std::unordered_map<uint64_t, pid_t> inode_pid_;
  struct Entry {
    ProcessInfo info;
    uint64_t generation = 0;  // last scan that found a socket of this process
  };
  std::unordered_map<pid_t, Entry> pids_;
  uint64_t generation_ = 0;
  size_t processes_ = 0;
};

// Parses a /proc fd link target "socket:[12345]"; 0 when it is not a socket.
uint64_t parse_socket_link(std::string_view target);

}  // namespace nabla::sniffer
