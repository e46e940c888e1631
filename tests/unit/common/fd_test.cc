#include "nabla/common/fd.hh"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <string>
#include <system_error>
#include <utility>

#include "nabla/common/clock.hh"
#include "nabla/common/error.hh"

namespace nabla::common {
namespace {

bool is_open(int fd) {
  return ::fcntl(fd, F_GETFD) != -1;
}

TEST(Error, CheckSyscallPassesAndThrows) {
  EXPECT_EQ(check_syscall("ok", 5), 5);
  EXPECT_EQ(check_syscall_ssize("ok", 0), 0);
  errno = EBADF;
  try {
    check_syscall("close fd 99999", -1);
    FAIL();
  } catch (const std::system_error& e) {
    EXPECT_EQ(e.code().value(), EBADF);
    EXPECT_EQ(e.code().category(), std::system_category());
    EXPECT_EQ(std::string(e.what()).rfind("close fd 99999", 0), 0u) << e.what();
  }
}

TEST(FileDescriptor, ClosesOnDestructionAndMove) {
  int raw = -1;
  {
    FileDescriptor fd = FileDescriptor::socket(AF_INET, SOCK_STREAM, 0);
    raw = fd.get();
    EXPECT_TRUE(fd.valid());
    EXPECT_TRUE(is_open(raw));
    EXPECT_EQ(::fcntl(raw, F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
    FileDescriptor moved = std::move(fd);
    EXPECT_FALSE(fd.valid());  // NOLINT(bugprone-use-after-move): moved-from state is defined
    EXPECT_EQ(moved.get(), raw);
  }
  EXPECT_FALSE(is_open(raw));
}

TEST(FileDescriptor, ReleaseAndReset) {
  FileDescriptor fd = FileDescriptor::open("/dev/null", O_RDONLY);
  EXPECT_EQ(::fcntl(fd.get(), F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
  const int raw = fd.release();
  EXPECT_FALSE(fd.valid());
  EXPECT_TRUE(is_open(raw));
  fd.reset(raw);
  EXPECT_EQ(fd.get(), raw);
  fd.reset();
  EXPECT_FALSE(is_open(raw));
  FileDescriptor a = FileDescriptor::open("/dev/null", O_RDONLY);
  const int ra = a.get();
  a = FileDescriptor::open("/dev/null", O_RDONLY);  // move-assign closes the old one
  EXPECT_TRUE(a.valid());
  if (a.get() != ra) {
    EXPECT_FALSE(is_open(ra));
  }
}

TEST(FileDescriptor, OpenFailureNamesPath) {
  try {
    FileDescriptor::open("/nonexistent/nabla", O_RDONLY);
    FAIL();
  } catch (const std::system_error& e) {
    EXPECT_EQ(e.code().value(), ENOENT);
    EXPECT_NE(std::string(e.what()).find("open /nonexistent/nabla"), std::string::npos);
  }
}

TEST(FileDescriptor, PipeWriteAllReadSome) {
  auto pipe = FileDescriptor::pipe();
  pipe.write_end.write_all(std::string_view("hello"));
  std::array<std::byte, 16> buf{};
  EXPECT_EQ(pipe.read_end.read_some(buf), 5u);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(buf.data()), 5), "hello");
  pipe.write_end.reset();
  EXPECT_EQ(pipe.read_end.read_some(buf), 0u);  // EOF
}

TEST(Clock, MonotonicAdvancesAndRealtimeIsEpoch) {
  const int64_t a = monotonic_ns();
  ::usleep(2000);
  const int64_t b = monotonic_ns();
  EXPECT_GE(b - a, 2'000'000);
  EXPECT_LT(b - a, 2'000'000'000);
  // After 2020-01-01 and before 2100-01-01.
  EXPECT_GT(realtime_ns(), 1'577'836'800'000'000'000);
  EXPECT_LT(realtime_ns(), 4'102'444'800'000'000'000);
}

}  // namespace
}  // namespace nabla::common
