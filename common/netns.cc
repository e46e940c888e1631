#include "nabla/common/netns.hh"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <sstream>
#include <system_error>
#include <thread>

#include "nabla/common/clock.hh"
#include "nabla/common/error.hh"
#include "nabla/common/log.hh"

extern char** environ;

namespace nabla::common {

namespace {

std::atomic<uint64_t> g_namespace_seq{0};

std::string join(const std::vector<std::string>& argv) {
  std::string out;
  for (const auto& a : argv) {
    if (!out.empty()) out += ' ';
    out += a;
  }
  return out;
}

// Everything the child needs, prepared before fork() so that the child only
// makes async-signal-safe calls (setns, dup2, open, execve, _exit).
struct ExecPlan {
  std::string program;
  std::vector<std::string> args;
  std::vector<char*> argv;

  explicit ExecPlan(const std::vector<std::string>& command) : args(command) {
    if (command.empty()) throw std::invalid_argument("run_command: empty argv");
    program = command[0].find('/') != std::string::npos ? command[0] : find_program(command[0]);
    if (program.empty()) {
      throw std::system_error(ENOENT, std::system_category(), "exec " + command[0]);
    }
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
  }
};

[[noreturn]] void child_exec(const ExecPlan& plan, int ns_fd, int out_fd, int err_fd) {
  if (ns_fd >= 0 && ::setns(ns_fd, CLONE_NEWNET) != 0) _exit(126);
  const int devnull = ::open("/dev/null", O_RDONLY);
  if (devnull >= 0) ::dup2(devnull, STDIN_FILENO);
  if (out_fd >= 0) ::dup2(out_fd, STDOUT_FILENO);
  if (err_fd >= 0) ::dup2(err_fd, STDERR_FILENO);
  ::execve(plan.program.c_str(), plan.argv.data(), environ);
  _exit(127);
}

int decode_status(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

}  // namespace

bool pid_alive(pid_t pid) {
  return ::kill(pid, 0) == 0 || errno == EPERM;
}

CommandError::CommandError(const std::vector<std::string>& argv, const CommandResult& result)
    : std::runtime_error("`" + join(argv) + "` " +
                         (result.timed_out ? std::string("timed out")
                                           : "exited " + std::to_string(result.exit_code)) +
                         (result.stderr_text.empty() ? "" : ": " + result.stderr_text)),
      result_(result) {}

std::string find_program(std::string_view name) {
  const char* path_env = std::getenv("PATH");
  std::string path = path_env != nullptr ? path_env : "/usr/sbin:/usr/bin:/sbin:/bin";
  path += ":/usr/sbin:/sbin";  // ip and iptables live here even when PATH lacks them
  std::istringstream dirs(path);
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    if (dir.empty()) continue;
    std::string candidate = dir + "/" + std::string(name);
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return {};
}

CommandResult run_command(const std::vector<std::string>& argv, const NetNamespace* ns,
                          std::chrono::milliseconds timeout) {
  const ExecPlan plan(argv);
  FileDescriptor ns_fd = ns != nullptr ? ns->open() : FileDescriptor();
  auto out = FileDescriptor::pipe();
  auto err = FileDescriptor::pipe();
  const pid_t pid = ::fork();
  if (pid < 0) throw_system_error("fork");
  if (pid == 0) child_exec(plan, ns_fd.get(), out.write_end.get(), err.write_end.get());
  out.write_end.reset();
  err.write_end.reset();

  CommandResult result;
  const int64_t deadline = monotonic_ns() + timeout.count() * 1'000'000;
  pollfd fds[2] = {{out.read_end.get(), POLLIN, 0}, {err.read_end.get(), POLLIN, 0}};
  std::string* sinks[2] = {&result.stdout_text, &result.stderr_text};
  int open_fds = 2;
  while (open_fds > 0) {
    const int64_t left_ms = (deadline - monotonic_ns()) / 1'000'000;
    if (left_ms <= 0) {
      result.timed_out = true;
      ::kill(pid, SIGKILL);
      break;
    }
    const int n = ::poll(fds, 2, static_cast<int>(left_ms));
    if (n < 0 && errno != EINTR) {
      ::kill(pid, SIGKILL);
      break;
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      char buf[4096];
      const ssize_t got = ::read(fds[i].fd, buf, sizeof buf);
      if (got > 0) {
        sinks[i]->append(buf, static_cast<size_t>(got));
      } else if (got == 0 || (errno != EINTR && errno != EAGAIN)) {
        fds[i].fd = -1;
        --open_fds;
      }
    }
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  result.exit_code = decode_status(status);
  while (!result.stderr_text.empty() && result.stderr_text.back() == '\n') {
    result.stderr_text.pop_back();
  }
  return result;
}

CommandResult run_checked(const std::vector<std::string>& argv, const NetNamespace* ns,
                          std::chrono::milliseconds timeout) {
  CommandResult result = run_command(argv, ns, timeout);
  if (result.timed_out || result.exit_code != 0) throw CommandError(argv, result);
  return result;
}

NetNamespace::NetNamespace(std::string_view label) {
  name_ = std::string(kNamespacePrefix) + std::to_string(::getpid()) + "-" +
          std::to_string(g_namespace_seq.fetch_add(1)) + "-" + std::string(label);
  nabla::common::run_checked({"ip", "netns", "add", name_});  // in the root namespace
  try {
    set_up("lo");
  } catch (...) {
    run_command({"ip", "netns", "delete", name_});
    throw;
  }
}

NetNamespace::NetNamespace(NetNamespace&& other) noexcept : name_(std::move(other.name_)) {
  other.name_.clear();
}

NetNamespace::~NetNamespace() {
  if (name_.empty()) return;
  try {
    const CommandResult r = run_command({"ip", "netns", "delete", name_});
    if (r.exit_code != 0) log_warn("ip netns delete ", name_, " failed: ", r.stderr_text);
  } catch (const std::exception& e) {
    log_warn("ip netns delete ", name_, ": ", e.what());
  }
}

std::string NetNamespace::path() const {
  return "/run/netns/" + name_;
}

FileDescriptor NetNamespace::open() const {
  return FileDescriptor::open(path(), O_RDONLY);
}

FileDescriptor NetNamespace::socket(int domain, int type, int protocol) const {
  const FileDescriptor ns_fd = open();
  FileDescriptor result;
  run_in_netns(ns_fd.get(), [&] { result = FileDescriptor::socket(domain, type, protocol); });
  return result;
}

std::string netns_path(std::string_view spec) {
  if (spec.empty()) throw std::invalid_argument("empty namespace (NAME, /path or pid:N)");
  if (spec.front() == '/') return std::string(spec);
  if (spec.rfind("pid:", 0) == 0) {
    const std::string_view digits = spec.substr(4);
    const bool numeric = !digits.empty() && digits.size() <= 9 &&
                         digits.find_first_not_of("0123456789") == std::string_view::npos;
    if (!numeric || digits == "0") {
      throw std::invalid_argument("'" + std::string(spec) + "': pid:N needs a positive pid");
    }
    return "/proc/" + std::string(digits) + "/ns/net";
  }
  if (spec.find('/') != std::string_view::npos || spec == "." || spec == "..") {
    throw std::invalid_argument("'" + std::string(spec) +
                                "' is not a name under /run/netns, an absolute path or pid:N");
  }
  return "/run/netns/" + std::string(spec);
}

NetnsId netns_id(const std::string& path) {
  struct stat st {};
  check_syscall("stat " + path, ::stat(path.c_str(), &st));
  return NetnsId{static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino)};
}

NetnsId current_netns_id() {
  return netns_id("/proc/thread-self/ns/net");
}

void run_in_netns(int ns_fd, const std::function<void()>& fn) {
  std::exception_ptr error;
  // setns(CLONE_NEWNET) changes only the calling thread; a short-lived thread
  // does the work so the caller's namespace is never touched.
  std::thread helper([&] {
    try {
      check_syscall("setns", ::setns(ns_fd, CLONE_NEWNET));
      fn();
    } catch (...) {
      error = std::current_exception();
    }
  });
  helper.join();
  if (error) std::rethrow_exception(error);
}

void enter_netns(const std::string& path) {
  const FileDescriptor fd = FileDescriptor::open(path, O_RDONLY);
  check_syscall("setns " + path, ::setns(fd.get(), CLONE_NEWNET));
}

void NetNamespace::add_address(std::string_view ifname, std::string_view cidr) const {
  run_checked({"ip", "addr", "add", std::string(cidr), "dev", std::string(ifname)});
}

void NetNamespace::set_up(std::string_view ifname) const {
  run_checked({"ip", "link", "set", std::string(ifname), "up"});
}

VethPair::VethPair(const NetNamespace& ns_a, std::string name_a, const NetNamespace& ns_b,
                   std::string name_b)
    : ns_a_(ns_a), name_a_(std::move(name_a)), name_b_(std::move(name_b)) {
  if (name_a_.size() > 15 || name_b_.size() > 15) {
    throw std::invalid_argument("veth names must be at most 15 characters");
  }
  nabla::common::run_checked({"ip", "link", "add", name_a_, "netns", ns_a.name(), "type", "veth",
                              "peer", "name", name_b_, "netns", ns_b.name()});
}

VethPair::~VethPair() {
  try {
    const CommandResult r = ns_a_.run({"ip", "link", "delete", name_a_});
    if (r.exit_code != 0) log_warn("ip link delete ", name_a_, " failed: ", r.stderr_text);
  } catch (const std::exception& e) {
    log_warn("ip link delete ", name_a_, ": ", e.what());
  }
}

ChildProcess::ChildProcess(const std::vector<std::string>& argv, const NetNamespace* ns,
                           const std::string& output_path) {
  const ExecPlan plan(argv);
  FileDescriptor ns_fd = ns != nullptr ? ns->open() : FileDescriptor();
  FileDescriptor out;
  if (!output_path.empty()) {
    out = FileDescriptor::open(output_path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644);
  }
  pid_ = ::fork();
  if (pid_ < 0) throw_system_error("fork");
  if (pid_ == 0) child_exec(plan, ns_fd.get(), out.get(), out.get());
}

bool ChildProcess::running() {
  if (reaped_) return false;
  const pid_t r = ::waitpid(pid_, &status_, WNOHANG);
  if (r == pid_) reaped_ = true;
  return !reaped_;
}

void ChildProcess::signal(int signo) const {
  if (!reaped_) ::kill(pid_, signo);
}

int ChildProcess::wait(std::chrono::milliseconds timeout) {
  const int64_t deadline = monotonic_ns() + timeout.count() * 1'000'000;
  while (running()) {
    if (monotonic_ns() >= deadline) return -1;
    ::usleep(2000);
  }
  return decode_status(status_);
}

ChildProcess::~ChildProcess() {
  if (pid_ <= 0 || reaped_) return;
  signal(SIGTERM);
  if (wait(std::chrono::seconds(2)) < 0) {
    log_warn("child ", pid_, " ignored SIGTERM; sending SIGKILL");
    signal(SIGKILL);
    while (::waitpid(pid_, &status_, 0) < 0 && errno == EINTR) {
    }
    reaped_ = true;
  }
}

size_t sweep_stale_namespaces() noexcept {
  size_t removed = 0;
  DIR* dir = ::opendir("/run/netns");
  if (dir == nullptr) return 0;
  std::vector<std::string> stale;
  while (const dirent* entry = ::readdir(dir)) {
    const std::string name = entry->d_name;
    if (name.rfind(kNamespacePrefix, 0) != 0) continue;
    const pid_t creator = static_cast<pid_t>(std::atol(name.c_str() + kNamespacePrefix.size()));
    if (creator <= 0 || creator == ::getpid() || pid_alive(creator)) continue;
    stale.push_back(name);
  }
  ::closedir(dir);
  for (const auto& name : stale) {
    try {
      if (run_command({"ip", "netns", "delete", name}).exit_code == 0) {
        ++removed;
        log_info("removed stale namespace ", name);
      }
    } catch (const std::exception& e) {
      log_warn("sweep: ip netns delete ", name, ": ", e.what());
    }
  }
  return removed;
}

}  // namespace nabla::common
