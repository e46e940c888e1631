#include "nabla/common/instance_lock.hh"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <system_error>
#include <utility>

#include "nabla/common/error.hh"
#include "nabla/common/local_keys.hh"

namespace nabla::common {
namespace {

std::string read_pid(int fd) {
  char buf[32] = {};
  const ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
  std::string text(buf, n > 0 ? static_cast<std::size_t>(n) : 0);
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text.find_first_not_of("0123456789") == std::string::npos ? text : std::string();
}

bool same_file(int fd, const std::string& path) {
  struct stat held {};
  struct stat named {};
  return ::fstat(fd, &held) == 0 && ::stat(path.c_str(), &named) == 0 &&
         held.st_ino == named.st_ino && held.st_dev == named.st_dev;
}

}  // namespace

std::string InstanceLock::path_for(std::string_view daemon, const std::string& netns_file,
                                   const std::string& run_dir) {
  struct stat ns {};
  check_syscall("stat " + netns_file, ::stat(netns_file.c_str(), &ns));
  return run_dir + "/" + std::string(daemon) + "-net" + std::to_string(ns.st_ino) + ".lock";
}

InstanceLock InstanceLock::acquire(std::string_view daemon, const std::string& netns_file,
                                   const std::string& run_dir) {
  struct stat ns {};
  check_syscall("stat " + netns_file, ::stat(netns_file.c_str(), &ns));
  prepare_run_dir(run_dir, kKeyGroup);
  const std::string path = path_for(daemon, netns_file, run_dir);
  // A holder that exits unlinks the file before it lets go of the lock: one
  // that locked a file that is no longer the one named `path` starts over.
  for (int attempt = 0; attempt < 8; ++attempt) {
    FileDescriptor fd = FileDescriptor::open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0640);
    if (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) {
      if (errno != EWOULDBLOCK)
        throw std::system_error(errno, std::generic_category(), "flock " + path);
      const std::string pid = read_pid(fd.get());
      throw AlreadyRunningError("another nabla-" + std::string(daemon) +
                                (pid.empty() ? "" : " (pid " + pid + ")") +
                                " already runs in this network namespace (net:[" +
                                std::to_string(ns.st_ino) + "], lock " + path + ")");
    }
    if (!same_file(fd.get(), path)) continue;
    const std::string pid = std::to_string(::getpid()) + "\n";
    check_syscall("ftruncate " + path, ::ftruncate(fd.get(), 0));
    check_syscall("write " + path, ::pwrite(fd.get(), pid.data(), pid.size(), 0));
    return InstanceLock(std::move(fd), path);
  }
  throw std::runtime_error("could not take the lock " + path + ": it keeps being replaced");
}

InstanceLock::InstanceLock(InstanceLock&& other) noexcept
    : fd_(std::move(other.fd_)), path_(std::exchange(other.path_, {})) {}

InstanceLock::~InstanceLock() {
  if (!fd_) return;
  ::unlink(path_.c_str());  // while still held: the next daemon makes a fresh file
}

}  // namespace nabla::common
