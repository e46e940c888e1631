// The project version, defined for this file only by common/CMakeLists.txt.
#include "nabla/common/version.hh"

#ifndef NABLA_VERSION
#error "NABLA_VERSION is defined by common/CMakeLists.txt from the project version"
#endif

namespace nabla::common {

const char* nabla_version() noexcept {
  return NABLA_VERSION;
}

}  // namespace nabla::common
