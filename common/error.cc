#include "nabla/common/error.hh"

#include <cerrno>
#include <string>
#include <system_error>

namespace nabla::common {

void throw_system_error(std::string_view what) {
  const int saved = errno;
  throw std::system_error(saved, std::system_category(), std::string(what));
}

int check_syscall(std::string_view what, int ret) {
  if (ret < 0) throw_system_error(what);
  return ret;
}

long check_syscall_ssize(std::string_view what, long ret) {
  if (ret < 0) throw_system_error(what);
  return ret;
}

}  // namespace nabla::common
