#pragma once
// Network namespaces for testbeds and integration tests, as RAII objects:
// a NetNamespace is `ip netns add`-ed on creation and deleted by its
// destructor; a VethPair joins two namespaces; ChildProcess runs a program
// inside a namespace and is killed (by pid) when the object dies.
//
// Names: every namespace is called nb-<creator pid>-<seq>-<label>, so
// sweep_stale_namespaces() can remove leftovers of crashed runs (creator pid
// no longer alive) without touching namespaces of other live processes.
//
// External commands are run with fork/execve and an argument vector, never a
// shell; a child enters its namespace with setns(2) before exec. Setup calls
// throw (std::system_error naming the call, or CommandError with the
// command's stderr); destructors log and never throw.
#include <sys/types.h>

#include <chrono>
#include <compare>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "nabla/common/fd.hh"

namespace nabla::common {

inline constexpr std::string_view kNamespacePrefix = "nb-";

class NetNamespace;

struct CommandResult {
  int exit_code = -1;  // exit status, or 128 + signal number if killed
  std::string stdout_text;
  std::string stderr_text;
  bool timed_out = false;
};

// A command that ran but failed: what() holds the argv, the exit code and the
// command's stderr.
class CommandError : public std::runtime_error {
 public:
  CommandError(const std::vector<std::string>& argv, const CommandResult& result);
  const CommandResult& result() const noexcept { return result_; }

 private:
  CommandResult result_;
};

// Runs argv[0] (searched in PATH) with the given arguments, optionally inside
// `ns`, captures stdout and stderr, and kills it (SIGKILL) after `timeout`.
// Throws std::system_error if it cannot be started at all.
CommandResult run_command(const std::vector<std::string>& argv, const NetNamespace* ns = nullptr,
                          std::chrono::milliseconds timeout = std::chrono::seconds(10));

// run_command, then throws CommandError unless it exited with status 0.
CommandResult run_checked(const std::vector<std::string>& argv, const NetNamespace* ns = nullptr,
                          std::chrono::milliseconds timeout = std::chrono::seconds(10));

// Searches PATH for a program; empty when not found.
std::string find_program(std::string_view name);

class NetNamespace {
 public:
  // Creates nb-<pid>-<seq>-<label> with `ip netns add` and brings its `lo` up.
  explicit NetNamespace(std::string_view label);
  ~NetNamespace();
  NetNamespace(NetNamespace&& other) noexcept;
  NetNamespace& operator=(NetNamespace&&) = delete;
  NetNamespace(const NetNamespace&) = delete;
  NetNamespace& operator=(const NetNamespace&) = delete;

  const std::string& name() const noexcept { return name_; }
  std::string path() const;  // /run/netns/<name>
  // An fd on the namespace (O_RDONLY|O_CLOEXEC), for setns(2).
  FileDescriptor open() const;

  // Creates a socket inside this namespace (the calling thread's namespace is
  // unchanged: a helper thread enters the namespace and makes the socket).
  FileDescriptor socket(int domain, int type, int protocol) const;

  // Runs a command inside this namespace (see run_command / run_checked).
  CommandResult run(const std::vector<std::string>& argv) const { return run_command(argv, this); }
  CommandResult run_checked(const std::vector<std::string>& argv) const {
    return nabla::common::run_checked(argv, this);
  }

  // `ip addr add <cidr> dev <ifname>` and `ip link set <ifname> up` in here.
  void add_address(std::string_view ifname, std::string_view cidr) const;
  void set_up(std::string_view ifname) const;

 private:
  std::string name_;
};

// A veth pair with one end in each namespace, created directly in them (no
// interface ever appears in the root namespace). Interface names are at most
// 15 characters. Destroying the pair deletes end `a` (which removes both).
class VethPair {
 public:
  VethPair(const NetNamespace& ns_a, std::string name_a, const NetNamespace& ns_b,
           std::string name_b);
  ~VethPair();
  VethPair(const VethPair&) = delete;
  VethPair& operator=(const VethPair&) = delete;

  const std::string& name_a() const noexcept { return name_a_; }
  const std::string& name_b() const noexcept { return name_b_; }

 private:
  const NetNamespace& ns_a_;
  std::string name_a_;
  std::string name_b_;
};

// A process started inside a namespace (or the current one when ns is null),
// with stdout/stderr inherited or redirected to a file. The destructor sends
// SIGTERM, waits up to 2 s, then SIGKILLs and reaps it.
class ChildProcess {
 public:
  ChildProcess(const std::vector<std::string>& argv, const NetNamespace* ns,
               const std::string& output_path = {});
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const noexcept { return pid_; }
  bool running();
  // Sends a signal to this child only (by pid).
  void signal(int signo) const;
  // Waits for exit up to `timeout`; returns the exit code (128 + signal when
  // killed by one) or -1 on timeout.
  int wait(std::chrono::milliseconds timeout);

 private:
  pid_t pid_ = -1;
  int status_ = 0;
  bool reaped_ = false;
};

// Whether a process with this pid exists (also one we may not signal).
bool pid_alive(pid_t pid);

// A network namespace's identity: the device and inode of its nsfs file
// (what stat(2) of /run/netns/NAME or /proc/PID/ns/net gives).
struct NetnsId {
  uint64_t dev = 0;
  uint64_t inode = 0;
  auto operator<=>(const NetnsId&) const = default;
};

// The path of a namespace given as NAME (a name under /run/netns), an
// absolute path, or pid:N (/proc/N/ns/net). Pure; throws
// std::invalid_argument for an empty spec, a name with '/', or a bad pid.
std::string netns_path(std::string_view spec);
// The namespace behind `path`; throws std::system_error naming the path.
NetnsId netns_id(const std::string& path);
// The calling thread's namespace.
NetnsId current_netns_id();
// Runs `fn` on a short-lived thread that entered the namespace `ns_fd`, so
// sockets it makes belong to that namespace and the caller's is untouched.
// Rethrows what `fn` (or setns) threw.
void run_in_netns(int ns_fd, const std::function<void()>& fn);
// Moves the calling thread into the namespace at `path` (threads and
// children it starts afterwards inherit it). Throws std::system_error.
void enter_netns(const std::string& path);

// Deletes nb-<pid>-* namespaces whose creator pid is no longer alive; returns
// how many were removed. Never throws (failures are logged).
size_t sweep_stale_namespaces() noexcept;

}  // namespace nabla::common
