// inode → process map; see proc_map.hh.
#include "nabla/sniffer/proc_map.hh"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <charconv>
#include <cstring>

#include "nabla/common/fd.hh"

namespace nabla::sniffer {
namespace {

// A DIR* that closes itself.
class Dir {
 public:
  explicit Dir(int dirfd) : dir_(dirfd >= 0 ? ::fdopendir(dirfd) : nullptr) {
    if (dir_ == nullptr && dirfd >= 0) ::close(dirfd);
  }
  ~Dir() {
    if (dir_ != nullptr) ::closedir(dir_);
  }
  Dir(const Dir&) = delete;
  Dir& operator=(const Dir&) = delete;
  DIR* get() const { return dir_; }
  int fd() const { return ::dirfd(dir_); }

 private:
  DIR* dir_;
};

bool parse_pid(const char* name, pid_t& pid) {
  const char* end = name + std::strlen(name);
  const auto [ptr, ec] = std::from_chars(name, end, pid);
  return ec == std::errc() && ptr == end && pid > 0;
}

// Reads a small /proc file into `buf`; returns its length (0 on failure).
size_t read_small(int dirfd, const char* path, char* buf, size_t size) {
  const common::FileDescriptor fd(::openat(dirfd, path, O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return 0;
  const ssize_t n = ::read(fd.get(), buf, size);
  return n > 0 ? static_cast<size_t>(n) : 0;
}

// Fills `info` with the process's pid, comm and cgroup; false when it is gone.
bool read_process_at(int proc_dirfd, pid_t pid, ProcessInfo& info) {
  char path[32];
  char text[1024];  // comm (16 bytes) or a cgroup file
  std::snprintf(path, sizeof path, "%d/comm", pid);
  size_t len = read_small(proc_dirfd, path, text, sizeof text);
  if (len > 0 && text[len - 1] == '\n') --len;
  info.pid = pid;
  info.comm.assign(text, len);
  std::snprintf(path, sizeof path, "%d/cgroup", pid);
  const size_t cgroup_len = read_small(proc_dirfd, path, text, sizeof text);
  info.cgroup = parse_cgroup_file(std::string_view(text, cgroup_len));
  return len > 0;
}

}  // namespace

const char* to_string(OwnerSource source) {
  switch (source) {
    case OwnerSource::kSocket:
      return "socket";
    case OwnerSource::kListener:
      return "listener";
    case OwnerSource::kTuple:
      return "tuple";
    case OwnerSource::kCgroup:
      return "cgroup";
    case OwnerSource::kGone:
      return "gone-before-scan";
    case OwnerSource::kNone:
      return "none";
  }
  return "none";
}

std::string parse_cgroup_file(std::string_view text) {
  std::string_view first;
  while (!text.empty()) {
    const size_t eol = text.find('\n');
    const std::string_view line = text.substr(0, eol);
    text.remove_prefix(eol == std::string_view::npos ? text.size() : eol + 1);
    // hierarchy-ID:controllers:path; the path may itself contain ':'.
    const size_t a = line.find(':');
    const size_t b = a == std::string_view::npos ? a : line.find(':', a + 1);
    if (b == std::string_view::npos) continue;
    const std::string_view path = line.substr(b + 1);
    if (line.substr(0, b + 1) == "0::") return std::string(path);
    if (first.empty()) first = path;
  }
  return std::string(first);
}

uint64_t parse_socket_link(std::string_view target) {
  constexpr std::string_view kPrefix = "socket:[";
  if (target.size() < kPrefix.size() + 2 || target.substr(0, kPrefix.size()) != kPrefix ||
      target.back() != ']') {
    return 0;
  }
  const std::string_view digits = target.substr(kPrefix.size(), target.size() - kPrefix.size() - 1);
  uint64_t inode = 0;
  const auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), inode);
  if (ec != std::errc() || ptr != digits.data() + digits.size()) return 0;
  return inode;
}

ProcMap::ProcMap(std::string proc_root) : root_(std::move(proc_root)) {}

bool ProcMap::scan_fds(int proc_dirfd, pid_t pid) {
  char path[32];
  char link[64];
  std::snprintf(path, sizeof path, "%d/fd", pid);
  Dir fds(::openat(proc_dirfd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (fds.get() == nullptr) return false;  // exited, or not ours to read
  bool has_socket = false;
  for (dirent* fd = ::readdir(fds.get()); fd != nullptr; fd = ::readdir(fds.get())) {
    if (fd->d_name[0] == '.') continue;
    const ssize_t n = ::readlinkat(fds.fd(), fd->d_name, link, sizeof link);
    if (n <= 0 || static_cast<size_t>(n) >= sizeof link) continue;
    const uint64_t inode = parse_socket_link(std::string_view(link, static_cast<size_t>(n)));
    if (inode == 0) continue;
    has_socket = true;
    const auto [it, inserted] = inode_pid_.try_emplace(inode, pid);
    if (!inserted && pid < it->second) it->second = pid;
  }
  return has_socket;
}

void ProcMap::note_process(int proc_dirfd, pid_t pid) {
  Entry& entry = pids_[pid];
  entry.generation = generation_;
  // comm is re-read every scan: exec keeps the pid but changes the name.
  read_process_at(proc_dirfd, pid, entry.info);
}

size_t ProcMap::scan() {
  inode_pid_.clear();
  processes_ = 0;
  ++generation_;
  Dir proc(::open(root_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (proc.get() == nullptr) return 0;
  for (dirent* ent = ::readdir(proc.get()); ent != nullptr; ent = ::readdir(proc.get())) {
    pid_t pid = 0;
    if (!parse_pid(ent->d_name, pid)) continue;
    ++processes_;
    if (scan_fds(proc.fd(), pid)) note_process(proc.fd(), pid);
  }
  // Forget processes that no longer own any socket.
  std::erase_if(pids_,
                [this](const auto& entry) { return entry.second.generation != generation_; });
  return inode_pid_.size();
}

size_t ProcMap::scan_processes(std::span<const pid_t> pids) {
  Dir proc(::open(root_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (proc.get() == nullptr) return 0;
  const size_t before = inode_pid_.size();
  for (const pid_t pid : pids) {
    if (scan_fds(proc.fd(), pid)) note_process(proc.fd(), pid);
  }
  return inode_pid_.size() - before;
}

ProcessInfo ProcMap::read_process(pid_t pid) const {
  ProcessInfo info;
  const common::FileDescriptor proc(::open(root_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!proc.valid() || !read_process_at(proc.get(), pid, info)) return {};
  return info;
}

size_t ProcMap::rescan_known() {
  Dir proc(::open(root_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (proc.get() == nullptr) return 0;
  const size_t before = inode_pid_.size();
  for (const auto& [pid, entry] : pids_) scan_fds(proc.fd(), pid);
  return inode_pid_.size() - before;
}

const ProcessInfo* ProcMap::find(uint64_t inode) const {
  const auto it = inode_pid_.find(inode);
  if (it == inode_pid_.end()) return nullptr;
  const auto p = pids_.find(it->second);
  return p == pids_.end() ? nullptr : &p->second.info;
}

}  // namespace nabla::sniffer
