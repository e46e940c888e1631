#pragma once
// Error helpers for setup and control paths (see docs/design.md, "Two error policies").
//
// Setup paths throw std::system_error tagged with the failing call, in the
// spirit of mahimahi's SystemCall("what", ret). Data paths must not use these:
// they count failures instead.
#include <string_view>

namespace nabla::common {

// Throws std::system_error(errno, std::system_category(), what). Reads errno
// at the call, so call it right after the failing syscall.
[[noreturn]] void throw_system_error(std::string_view what);

// Returns ret when ret >= 0; otherwise throws std::system_error naming `what`
// with the current errno. Usage: check_syscall("socket", ::socket(...)).
int check_syscall(std::string_view what, int ret);

// Same for calls returning ssize_t (read, write, recv, ...).
long check_syscall_ssize(std::string_view what, long ret);

}  // namespace nabla::common
