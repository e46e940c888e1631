#pragma once
// Socket inode → owning process, from /proc/<pid>/fd/* links "socket:[N]".
// One scan walks every process once (what `ss -p` does too); buffers are
// reused across scans. A socket shared by several processes (fork) maps to
// the lowest pid. Processes that vanish mid-scan are skipped silently.
// Each process's comm and cgroup are re-read every scan (exec and cgroup
// moves keep the pid).
#include <sys/types.h>

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>

namespace nabla::sniffer {

struct ProcessInfo {
  pid_t pid = 0;
  std::string comm;    // /proc/<pid>/comm without the newline
  std::string cgroup;  // the process's cgroup path (see parse_cgroup_file)
};

// Who a flow's local end belongs to: the process, and the cgroup id its
// socket carried (sock_diag, Linux 5.7+; 0 when unknown).
struct Owner {
  ProcessInfo process;
  uint64_t cgroup_id = 0;
};

// How the owner was found (see attribution.hh).
enum class OwnerSource : uint8_t { kNone, kSocket, kListener, kTuple, kCgroup, kGone };
const char* to_string(OwnerSource source);

struct Attributed {
  const Owner* owner = nullptr;
  OwnerSource source = OwnerSource::kNone;
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
  // Adds the sockets of `pids` only (e.g. the processes of one cgroup), as
  // scan() would. Returns the number of inodes added.
  size_t scan_processes(std::span<const pid_t> pids);
  // A live process's comm and cgroup, whether or not it owns a socket;
  // pid 0 when it is gone.
  ProcessInfo read_process(pid_t pid) const;
  // The owner of a socket inode from the last scan, or nullptr.
  const ProcessInfo* find(uint64_t inode) const;
  size_t processes_scanned() const { return processes_; }
  // Whether the last scan found this process owning a socket.
  bool has_process(pid_t pid) const { return pids_.count(pid) != 0; }

 private:
  bool scan_fds(int proc_dirfd, pid_t pid);  // true if the process owns a socket
  // Records a process that owns sockets, its comm and cgroup read again.
  void note_process(int proc_dirfd, pid_t pid);

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

// The cgroup path in a /proc/PID/cgroup text: the cgroup v2 line ("0::/x"),
// else the first line's path; empty when there is none.
std::string parse_cgroup_file(std::string_view text);

// Parses a /proc fd link target "socket:[12345]"; 0 when it is not a socket.
uint64_t parse_socket_link(std::string_view target);

}  // namespace nabla::sniffer
