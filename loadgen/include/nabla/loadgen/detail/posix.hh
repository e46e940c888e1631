#pragma once
// POSIX helpers internal to loadgen (detail: not API): an owning fd and the monotonic clock.
// (common/ will offer the project-wide RAII fd; until it lands, loadgen keeps
// this minimal one private so nothing outside loadgen depends on it.)
#include <time.h>
#include <unistd.h>

#include <cstdint>
#include <system_error>
#include <utility>

namespace nabla::loadgen::detail {

class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  UniqueFd(UniqueFd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept {
    if (this != &other) {
      reset();
      fd_ = std::exchange(other.fd_, -1);
    }
    return *this;
  }
  ~UniqueFd() { reset(); }

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  void reset() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
};

// Throws std::system_error naming `what` when ret < 0; returns ret otherwise.
inline int check_syscall(int ret, const char* what) {
  if (ret < 0) throw std::system_error(errno, std::generic_category(), what);
  return ret;
}

inline int64_t monotonic_ns() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

}  // namespace nabla::loadgen::detail
