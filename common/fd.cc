#include "nabla/common/fd.hh"

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

#include "nabla/common/error.hh"

namespace nabla::common {

FileDescriptor::~FileDescriptor() {
  reset();
}

FileDescriptor& FileDescriptor::operator=(FileDescriptor&& other) noexcept {
  if (this != &other) reset(other.release());
  return *this;
}

int FileDescriptor::release() noexcept {
  return std::exchange(fd_, -1);
}

void FileDescriptor::reset(int fd) noexcept {
  if (fd_ >= 0 && fd_ != fd) ::close(fd_);
  fd_ = fd;
}

FileDescriptor FileDescriptor::socket(int domain, int type, int protocol) {
  return FileDescriptor(check_syscall("socket", ::socket(domain, type | SOCK_CLOEXEC, protocol)));
}

FileDescriptor FileDescriptor::open(const std::string& path, int flags, mode_t mode) {
  return FileDescriptor(
      check_syscall("open " + path, ::open(path.c_str(), flags | O_CLOEXEC, mode)));
}

FileDescriptor::Pipe FileDescriptor::pipe(int extra_flags) {
  int fds[2] = {-1, -1};
  check_syscall("pipe2", ::pipe2(fds, O_CLOEXEC | extra_flags));
  return Pipe{FileDescriptor(fds[0]), FileDescriptor(fds[1])};
}

void FileDescriptor::write_all(std::span<const std::byte> data) const {
  std::size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = ::write(fd_, data.data() + done, data.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw_system_error("write");
    }
    done += static_cast<std::size_t>(n);
  }
}

void FileDescriptor::write_all(std::string_view data) const {
  write_all(std::as_bytes(std::span<const char>(data.data(), data.size())));
}

std::size_t FileDescriptor::read_some(std::span<std::byte> data) const {
  for (;;) {
    const ssize_t n = ::read(fd_, data.data(), data.size());
    if (n >= 0) return static_cast<std::size_t>(n);
    if (errno != EINTR) throw_system_error("read");
  }
}

}  // namespace nabla::common
