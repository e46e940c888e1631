#pragma once
// A nabla-tier child process for tests that measure against the real tier on
// 127.0.0.1: started with the caller's flags (normally `--listen
// 127.0.0.1:0 ...`), its port read from the "nabla-tier listening on HOST
// port N" line it prints on stdout, SIGTERMed and reaped by pid when the
// object dies.
//
// Header-only on purpose: tests/support has no library of its own and every
// test that includes this already links nabla_common; nothing here needs it.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace nabla::testing {

class TierProcess {
 public:
  // How long the constructor waits for the "port N" line; port() is 0 after.
  static constexpr std::chrono::seconds kStartTimeout{5};

  // `binary` is the nabla-tier executable; `args` its flags (without argv[0]).
  // Never throws for a failed start: port() stays 0, which the test asserts.
  TierProcess(const std::string& binary, std::vector<std::string> args) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) return;
    // argv is built before fork: the child only dup2s and execs.
    std::string bin = binary;
    std::vector<char*> argv{bin.data()};
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    pid_ = ::fork();
    if (pid_ == 0) {
      ::dup2(fds[1], STDOUT_FILENO);
      ::execv(bin.c_str(), argv.data());
      ::_exit(127);
    }
    ::close(fds[1]);
    port_ = read_port(fds[0]);
    ::close(fds[0]);
  }
  ~TierProcess() {
    if (pid_ > 0) {
      ::kill(pid_, SIGTERM);
      int status;
      ::waitpid(pid_, &status, 0);
    }
  }
  TierProcess(const TierProcess&) = delete;
  TierProcess& operator=(const TierProcess&) = delete;

  uint16_t port() const { return port_; }
  pid_t pid() const { return pid_; }

 private:
  // Reads the first line (up to kStartTimeout) and returns the N of " port N",
  // or 0 when there is none.
  static uint16_t read_port(int fd) {
    std::string line;
    pollfd p{fd, POLLIN, 0};
    const auto deadline = std::chrono::steady_clock::now() + kStartTimeout;
    while (line.find('\n') == std::string::npos && std::chrono::steady_clock::now() < deadline) {
      if (::poll(&p, 1, 100) <= 0) continue;
      char buf[256];
      const ssize_t n = ::read(fd, buf, sizeof buf);
      if (n <= 0) break;
      line.append(buf, static_cast<size_t>(n));
    }
    const auto at = line.find(" port ");
    if (at == std::string::npos) return 0;
    return static_cast<uint16_t>(std::stoi(line.substr(at + 6)));
  }

  pid_t pid_ = -1;
  uint16_t port_ = 0;
};

}  // namespace nabla::testing
