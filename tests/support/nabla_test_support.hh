#pragma once
// Helpers shared by the test suites.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

namespace nabla::testing {

// True when NABLA_REQUIRE_ROOT=1: tests that need root must run, not skip.
inline bool root_required() {
  const char* v = std::getenv("NABLA_REQUIRE_ROOT");
  return v != nullptr && std::string(v) == "1";
}

}  // namespace nabla::testing

// Put at the top of a test that needs root (namespaces, iptables, NFQUEUE).
// Without root it skips with a reason; with NABLA_REQUIRE_ROOT=1 it fails.
#define NABLA_REQUIRE_ROOT_OR_SKIP()                                                  \
  do {                                                                                \
    if (::geteuid() != 0) {                                                           \
      if (::nabla::testing::root_required()) {                                        \
        FAIL() << "this test needs root and NABLA_REQUIRE_ROOT=1 forbids skipping";   \
      }                                                                               \
      GTEST_SKIP() << "needs root (network namespaces, iptables); run as root";       \
    }                                                                                 \
  } while (0)
