#pragma once
// One nabla-injectd and one nabla-sniffd per network namespace.
//
// Each daemon owns kernel state of its namespace that a second one would
// take apart: injectd removes every NABLA chain at start (the leftovers of a
// crash, it assumes), sniffd turns nf_conntrack_acct on and back off. So a
// daemon holds, for its whole life, an exclusive flock(2) on
// RUN_DIR/<daemon>-net<inode>.lock, where <inode> identifies the network
// namespace it works in (stat -L -c %i /proc/self/ns/net, or the --netns
// one), and a second daemon of the same kind there refuses to start with
// one line naming the first one's pid, before it binds a port or touches a
// chain. Daemons in other namespaces use other files.
//
// Why a file under /run/nabla and not an abstract unix socket (per network
// namespace by nature): any local user may bind any abstract name first
// and so keep the daemon from ever starting, while /run/nabla is root's
// (mode 0750). The kernel drops a flock when its holder dies, kill -9
// included, so a crash never leaves a stale lock; the file itself is
// removed on a clean exit and reused otherwise.
#include <stdexcept>
#include <string>
#include <string_view>

#include "nabla/common/fd.hh"

namespace nabla::common {

// Another daemon of the kind holds the lock; the message is the one line to print.
// holder() says who holds it without the "refusing to start" the message adds.
class AlreadyRunningError : public std::runtime_error {
 public:
  explicit AlreadyRunningError(const std::string& holder)
      : std::runtime_error(holder + "; refusing to start, which would take its rules apart"),
        holder_(holder) {}
  const std::string& holder() const { return holder_; }

 private:
  std::string holder_;
};

class InstanceLock {
 public:
  // `daemon` is "injectd" or "sniffd"; `netns_file` the namespace the daemon
  // works in. Throws AlreadyRunningError when another process holds the
  // lock, std::system_error when the directory or file cannot be made.
  static InstanceLock acquire(std::string_view daemon,
                              const std::string& netns_file = "/proc/self/ns/net",
                              const std::string& run_dir = "/run/nabla");
  InstanceLock(InstanceLock&& other) noexcept;
  InstanceLock& operator=(InstanceLock&&) = delete;
  InstanceLock(const InstanceLock&) = delete;
  InstanceLock& operator=(const InstanceLock&) = delete;
  // Removes the file, then releases the lock.
  ~InstanceLock();

  const std::string& path() const { return path_; }

  // RUN_DIR/<daemon>-net<inode of netns_file>.lock; throws std::system_error
  // when netns_file cannot be read.
  static std::string path_for(std::string_view daemon,
                              const std::string& netns_file = "/proc/self/ns/net",
                              const std::string& run_dir = "/run/nabla");

 private:
  InstanceLock(FileDescriptor fd, std::string path) : fd_(std::move(fd)), path_(std::move(path)) {}

  FileDescriptor fd_;
  std::string path_;
};

}  // namespace nabla::common
