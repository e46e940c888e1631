#pragma once
// Move-only owner of a file descriptor (after mahimahi's FileDescriptor and
// seastar's file_desc). Every fd in nabla lives in one of these; factories
// always create descriptors with *_CLOEXEC.
#include <sys/types.h>

#include <cstddef>
#include <span>
#include <string>
#include <string_view>

namespace nabla::common {

class FileDescriptor {
 public:
  FileDescriptor() noexcept = default;
  // Takes ownership of `fd` (which may be -1 for "none").
  explicit FileDescriptor(int fd) noexcept : fd_(fd) {}
  ~FileDescriptor();

  FileDescriptor(FileDescriptor&& other) noexcept : fd_(other.release()) {}
  FileDescriptor& operator=(FileDescriptor&& other) noexcept;
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;

  // socket(2) with SOCK_CLOEXEC added; throws std::system_error("socket").
  static FileDescriptor socket(int domain, int type, int protocol);
  // open(2) with O_CLOEXEC added; throws std::system_error("open <path>").
  static FileDescriptor open(const std::string& path, int flags, mode_t mode = 0);
  // pipe2(O_CLOEXEC | extra_flags); returns {read end, write end}.
  struct Pipe;
  static Pipe pipe(int extra_flags = 0);

  int get() const noexcept { return fd_; }
  bool valid() const noexcept { return fd_ >= 0; }
  explicit operator bool() const noexcept { return valid(); }
  // Gives up ownership without closing; the object becomes invalid.
  int release() noexcept;
  // Closes now (if valid). Never throws; a failing close(2) is ignored because
  // the descriptor is released by the kernel regardless (see close(2) NOTES).
  void reset(int fd = -1) noexcept;

  // Blocking helpers for setup paths; throw std::system_error.
  // write_all retries on EINTR and short writes until everything is written.
  void write_all(std::span<const std::byte> data) const;
  void write_all(std::string_view data) const;
  // Reads up to data.size() bytes; returns 0 on EOF. Retries on EINTR.
  std::size_t read_some(std::span<std::byte> data) const;

 private:
  int fd_ = -1;
};

struct FileDescriptor::Pipe {
  FileDescriptor read_end;
  FileDescriptor write_end;
};

}  // namespace nabla::common
