// The Debian package under a real systemd: this build's package (CPack),
// installed with dpkg in a systemd-nspawn container that boots this host's
// own file system under an overlay, with a private network namespace
// (tests/integration/systemd_container.sh), where
// tests/integration/package_under_systemd.sh checks install, the units'
// start, stop, restart and `systemd-analyze security`, ExecStopPost after a
// SIGKILL, an upgrade, remove and purge. Nothing reaches the host: its
// file system, users, /run and iptables stay as they were.
//
// Skips, saying why, where systemd-nspawn cannot boot a container (no
// cgroups, no overlayfs, inside another container that forbids it), and
// where this build installs elsewhere than /usr (the package's units name
// /usr/bin; `make package` configures that).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <iostream>
#include <string>

#include "nabla/common/netns.hh"
#include "nabla/common/text_file.hh"
#include "nabla_test_support.hh"

namespace nabla::testing {
namespace {

namespace fs = std::filesystem;

class PackageUnderSystemd : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("nabla-package-systemd-" + std::to_string(::getpid()));
    fs::create_directories(dir_ / "container");
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

std::string built_deb(const fs::path& dir) {
  const auto built = common::run_command(
      {"cpack", "-G", "DEB", "--config", std::string(NABLA_BINARY_DIR) + "/CPackConfig.cmake", "-B",
       dir.string()},
      nullptr, std::chrono::seconds(150));
  EXPECT_EQ(built.exit_code, 0) << built.stdout_text << built.stderr_text;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() == ".deb") return entry.path().string();
  }
  return "";
}

TEST_F(PackageUnderSystemd, InstallUnitsKillUpgradeRemoveAndPurge) {
  NABLA_REQUIRE_ROOT_OR_SKIP();
  NABLA_REQUIRE_PROGRAM_OR_SKIP("systemd-nspawn");
  NABLA_REQUIRE_PROGRAM_OR_SKIP("cpack");
  const std::string unit =
      common::read_text_file(std::string(NABLA_BINARY_DIR) + "/packaging/nabla-injectd.service");
  if (unit.find("\nExecStart=/usr/bin/nabla-injectd ") == std::string::npos) {
    GTEST_SKIP() << "this build installs elsewhere than /usr (configure with "
                    "-DCMAKE_INSTALL_PREFIX=/usr, as make package does)";
  }
  const std::string deb = built_deb(dir_ / "package");
  ASSERT_NE(deb, "");

  const std::string tests = std::string(NABLA_SOURCE_DIR) + "/tests/integration/";
  const auto r = common::run_command(
      {"unshare", "-m", "--propagation", "private", "bash", tests + "systemd_container.sh",
       (dir_ / "container").string(), tests + "package_under_systemd.sh", deb},
      nullptr, std::chrono::seconds(110));
  const std::string log = r.stdout_text + r.stderr_text;  // the launcher prints the script's
  if (r.exit_code == 77) GTEST_SKIP() << "systemd-nspawn cannot boot here:\n" << log;
  EXPECT_EQ(r.exit_code, 0) << log;
  EXPECT_EQ(log.find("FAIL:"), std::string::npos) << log;
  for (const char* check :
       {"ok: systemctl enable --now starts the three units",
        "ok: ExecStopPost removed the SIGKILLed injectd's chains",
        "ok: ExecStopPost removed the SIGKILLed sniffd's chain",
        "ok: the upgrade restarted injectd: a new process that serves",
        "ok: the upgrade left the stopped loadd stopped", "ok: purge removed the group nabla",
        "ok: purge removed /run/nabla", "ok: purge kept /etc/nabla/key as root:root 0640",
        "ok: systemd-analyze security rates nabla-loadd", "checks failed: 0"}) {
    EXPECT_NE(log.find(check), std::string::npos) << check << "\n" << log;
  }
  std::cout << log;
}

}  // namespace
}  // namespace nabla::testing
