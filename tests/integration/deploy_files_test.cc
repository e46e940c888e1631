// The deployment files, checked by the tools that consume them:
//  - the systemd units (packaging/*.service.in, with this build's program
//    paths filled in) pass `systemd-analyze verify`, which fails a unit
//    whose program is missing;
//  - the Ansible playbook (deploy/ansible/site.yml) passes
//    `ansible-playbook --syntax-check` with the example inventory, and a
//    `--check --connection local` run against this host succeeds (root:
//    the play becomes root).
// A missing tool skips, or fails under NABLA_REQUIRE_ROOT=1 (CI), naming it.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "nabla/common/netns.hh"
#include "nabla/common/text_file.hh"
#include "nabla_test_support.hh"

namespace nabla::testing {
namespace {

namespace fs = std::filesystem;

class DeployFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("nabla-deploy-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

void replace_all(std::string& text, const std::string& from, const std::string& to) {
  for (auto at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
}

// The unit template with its placeholders filled in, written into `dir`.
std::string unit_from_template(const fs::path& dir, const std::string& unit,
                               const std::string& bin_dir) {
  std::string text =
      common::read_text_file(std::string(NABLA_SOURCE_DIR) + "/packaging/" + unit + ".in");
  replace_all(text, "@NABLA_BIN_DIR@", bin_dir);
  replace_all(text, "@NABLA_ENV_DIR@", "/etc/nabla");
  replace_all(text, "@NABLA_DOC_DIR@", "/usr/share/doc/nabla");
  const std::string path = (dir / unit).string();
  std::ofstream(path) << text;
  return path;
}

std::string parent_dir(const char* program) {
  return fs::path(program).parent_path().string();
}

TEST_F(DeployFiles, SystemdUnitsVerify) {
  NABLA_REQUIRE_PROGRAM_OR_SKIP("systemd-analyze");
  const std::string injectd =
      unit_from_template(dir_, "nabla-injectd.service", parent_dir(NABLA_INJECTD_PATH));
  const std::string sniffd =
      unit_from_template(dir_, "nabla-sniffd.service", parent_dir(NABLA_SNIFFD_PATH));
  const auto r = common::run_command({"systemd-analyze", "verify", injectd, sniffd});
  EXPECT_EQ(r.exit_code, 0) << r.stdout_text << r.stderr_text;
  EXPECT_EQ(r.stderr_text, "");  // not even a warning

  // The check has teeth: a unit whose program is not there fails it.
  const fs::path missing = dir_ / "missing";
  fs::create_directories(missing);
  const std::string broken = unit_from_template(missing, "nabla-injectd.service", "/nonexistent");
  const auto bad = common::run_command({"systemd-analyze", "verify", broken});
  EXPECT_NE(bad.exit_code, 0) << bad.stderr_text;
  EXPECT_NE(bad.stderr_text.find("/nonexistent/nabla-injectd"), std::string::npos)
      << bad.stderr_text;
}

// The value of `key=` in a unit file's text, "" when absent.
std::string unit_setting(const std::string& text, const std::string& key) {
  const std::string prefix = "\n" + key + "=";
  const auto at = text.find(prefix);
  if (at == std::string::npos) return "";
  const auto start = at + prefix.size();
  return text.substr(start, text.find('\n', start) - start);
}

// Under a flood a daemon meets its unit's limits, not the host's.
TEST_F(DeployFiles, UnitsBoundMemoryTasksAndOpenFiles) {
  for (const char* unit : {"nabla-injectd.service", "nabla-sniffd.service"}) {
    const std::string text =
        common::read_text_file(std::string(NABLA_SOURCE_DIR) + "/packaging/" + unit + ".in");
    const std::string memory = unit_setting(text, "MemoryMax");
    EXPECT_TRUE(memory == "1G" || memory == "512M") << unit << ": MemoryMax=" << memory;
    EXPECT_EQ(unit_setting(text, "TasksMax"), "64") << unit;
    EXPECT_EQ(unit_setting(text, "LimitNOFILE"), "4096") << unit;
  }
}

const std::string kPlaybook = std::string(NABLA_SOURCE_DIR) + "/deploy/ansible/site.yml";

// ansible-playbook with its home and temporary files in `dir`.
std::vector<std::string> ansible_argv(const fs::path& dir, std::vector<std::string> args) {
  std::vector<std::string> argv = {"env", "HOME=" + dir.string(), "ANSIBLE_NOCOLOR=1",
                                   "ANSIBLE_LOCAL_TEMP=" + (dir / "tmp").string(),
                                   "ansible-playbook"};
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

TEST_F(DeployFiles, AnsiblePlaybookSyntax) {
  NABLA_REQUIRE_PROGRAM_OR_SKIP("ansible-playbook");
  const auto r = common::run_command(
      ansible_argv(dir_, {"--syntax-check", "-i",
                          std::string(NABLA_SOURCE_DIR) + "/deploy/ansible/inventory.example.ini",
                          kPlaybook}),
      nullptr, std::chrono::seconds(60));
  EXPECT_EQ(r.exit_code, 0) << r.stdout_text << r.stderr_text;
}

// Check mode against this host: every task is evaluated with the real
// modules and changes nothing. The package task is skipped by the playbook
// itself (a check run copies no package to inspect), the unit tasks when
// the host does not run systemd.
TEST_F(DeployFiles, AnsibleCheckRunAgainstLocalhost) {
  NABLA_REQUIRE_ROOT_OR_SKIP();
  NABLA_REQUIRE_PROGRAM_OR_SKIP("ansible-playbook");
  const std::string inventory = (dir_ / "inventory.ini").string();
  std::ofstream(inventory) << "[nabla_nodes]\nlocalhost ansible_connection=local "
                              "ansible_python_interpreter=/usr/bin/python3\n";
  const std::string key = (dir_ / "key").string();
  std::ofstream(key) << std::string(64, 'a') << "\n";
  const std::string deb = (dir_ / "nabla_0.0.0_amd64.deb").string();
  std::ofstream(deb) << "not inspected in check mode\n";
  const bool key_existed = fs::exists("/etc/nabla/key");
  const auto r = common::run_command(
      ansible_argv(dir_, {"-i", inventory, "--check", "--connection", "local", kPlaybook, "-e",
                          "nabla_key_file=" + key, "-e", "nabla_deb=" + deb, "-e",
                          "nabla_listen_address=127.0.0.1"}),
      nullptr, std::chrono::seconds(90));
  EXPECT_EQ(r.exit_code, 0) << r.stdout_text << r.stderr_text;
  EXPECT_NE(r.stdout_text.find("failed=0"), std::string::npos) << r.stdout_text;
  EXPECT_NE(r.stdout_text.find("The shared key"), std::string::npos) << r.stdout_text;
  EXPECT_EQ(fs::exists("/etc/nabla/key"), key_existed);  // check mode wrote nothing
}

// The same with a key per node, the documented default: the node gets its
// own ADDRESS.key from nabla_keys_dir, and as a coordinator the directory.
TEST_F(DeployFiles, AnsibleCheckRunWithAKeyPerNode) {
  NABLA_REQUIRE_ROOT_OR_SKIP();
  NABLA_REQUIRE_PROGRAM_OR_SKIP("ansible-playbook");
  const std::string inventory = (dir_ / "inventory.ini").string();
  std::ofstream(inventory) << "[nabla_nodes]\nlocalhost ansible_connection=local "
                              "ansible_python_interpreter=/usr/bin/python3\n"
                              "[nabla_coordinators]\nlocalhost\n";
  const fs::path keys = dir_ / "keys";
  fs::create_directory(keys);
  std::ofstream((keys / "127.0.0.1.key").string()) << std::string(64, 'a') << "\n";
  std::ofstream((keys / "10.0.0.12.key").string()) << std::string(64, 'b') << "\n";
  const std::string deb = (dir_ / "nabla_0.0.0_amd64.deb").string();
  std::ofstream(deb) << "not inspected in check mode\n";
  const bool key_existed = fs::exists("/etc/nabla/key");
  const bool keys_existed = fs::exists("/etc/nabla/keys");
  const auto r = common::run_command(
      ansible_argv(dir_, {"-i", inventory, "--check", "--connection", "local", kPlaybook, "-e",
                          "nabla_keys_dir=" + keys.string(), "-e", "nabla_deb=" + deb, "-e",
                          "nabla_listen_address=127.0.0.1"}),
      nullptr, std::chrono::seconds(90));
  EXPECT_EQ(r.exit_code, 0) << r.stdout_text << r.stderr_text;
  EXPECT_NE(r.stdout_text.find("failed=0"), std::string::npos) << r.stdout_text;
  for (const char* task : {"This node's own key", "The coordinator's key directory"}) {
    const auto at = r.stdout_text.find(task);
    ASSERT_NE(at, std::string::npos) << task << "\n" << r.stdout_text;
    // The task ran (changed in check mode, or ok when already in place).
    const std::string result = r.stdout_text.substr(at, r.stdout_text.find("TASK", at + 1) - at);
    EXPECT_EQ(result.find("skipping"), std::string::npos) << result;
  }
  EXPECT_EQ(fs::exists("/etc/nabla/key"), key_existed);  // check mode wrote nothing
  EXPECT_EQ(fs::exists("/etc/nabla/keys"), keys_existed);
}

}  // namespace
}  // namespace nabla::testing
