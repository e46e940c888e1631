#pragma once
// The project version (CMakeLists.txt `project(... VERSION ...)`), which the
// daemons report in daemon.info's "version" and `nabla nodes check` compares
// with its own: a daemon of another version is refused.

namespace nabla::common {

const char* nabla_version() noexcept;

}  // namespace nabla::common
