#pragma once
// Helpers shared by the test suites.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <sstream>
#include <string>

namespace nabla::testing {

// True when NABLA_REQUIRE_ROOT=1: tests that need root must run, not skip.
inline bool root_required() {
  const char* v = std::getenv("NABLA_REQUIRE_ROOT");
  return v != nullptr && std::string(v) == "1";
}

// The program's path when `name` is an executable file in a PATH directory,
// else empty.
inline std::string program_on_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::istringstream dirs(path != nullptr ? path : "/usr/bin:/bin");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    const std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return {};
}

// The program a test runs: NABLA_TEST_BIN_DIR/<name> when that variable is
// set (scripts/package-smoke.sh sets it to the installed package's bin
// directory, so the test drives the installed programs), else the program
// of this build at `built_path`.
inline std::string program_under_test(const std::string& name, const std::string& built_path) {
  const char* dir = std::getenv("NABLA_TEST_BIN_DIR");
  if (dir == nullptr || *dir == '\0') return built_path;
  return std::string(dir) + "/" + name;
}

}  // namespace nabla::testing

// Put at the top of a test that needs root (namespaces, iptables, NFQUEUE).
// Without root it skips with a reason; with NABLA_REQUIRE_ROOT=1 it fails.
#define NABLA_REQUIRE_ROOT_OR_SKIP()                                                \
  do {                                                                              \
    if (::geteuid() != 0) {                                                         \
      if (::nabla::testing::root_required()) {                                      \
        FAIL() << "this test needs root and NABLA_REQUIRE_ROOT=1 forbids skipping"; \
      }                                                                             \
      GTEST_SKIP() << "needs root (network namespaces, iptables); run as root";     \
    }                                                                               \
  } while (0)

// Put at the top of a test that runs an installed program (a real server
// such as memcached). Without it the test skips naming the program and the
// script that installs it; with NABLA_REQUIRE_ROOT=1 (CI: nothing may skip)
// it fails instead.
#define NABLA_REQUIRE_PROGRAM_OR_SKIP(name)                                            \
  do {                                                                                 \
    if (::nabla::testing::program_on_path(name).empty()) {                             \
      if (::nabla::testing::root_required()) {                                         \
        FAIL() << (name) << " is not installed (scripts/install-deps.sh installs it) " \
               << "and NABLA_REQUIRE_ROOT=1 forbids skipping";                         \
      }                                                                                \
      GTEST_SKIP() << (name) << " is not installed; run scripts/install-deps.sh";      \
    }                                                                                  \
  } while (0)
