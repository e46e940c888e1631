// The deployment files, checked by the tools that consume them:
//  - the systemd units (packaging/*.service.in, with this build's program
//    paths filled in) pass `systemd-analyze verify`, which fails a unit
//    whose program is missing; the load agent's runs unprivileged, with no
//    capability and the hardening it tolerates;
//  - the Debian maintainer scripts, run against stand-ins for the commands
//    they call, make the load agent's user on install and drop it, the
//    group and /run/nabla on purge (package_systemd_test.cc runs them for
//    real, under dpkg and systemd);
//  - the package CPack builds from this tree holds the load agent's
//    program, unit and env file (a conffile) beside the other daemons';
//  - the Ansible playbook (deploy/ansible/site.yml) passes
//    `ansible-playbook --syntax-check` with the example inventory, and a
//    `--check --connection local` run against this host succeeds (root:
//    the play becomes root), as a node and as a load agent.
// A missing tool skips, or fails under NABLA_REQUIRE_ROOT=1 (CI), naming it.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
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
  const std::string loadd =
      unit_from_template(dir_, "nabla-loadd.service", parent_dir(NABLA_LOADD_PATH));
  const auto r = common::run_command({"systemd-analyze", "verify", injectd, sniffd, loadd});
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

bool has_setting(const std::string& text, const std::string& key) {
  return text.find("\n" + key + "=") != std::string::npos;
}

std::string unit_text(const std::string& unit) {
  return common::read_text_file(std::string(NABLA_SOURCE_DIR) + "/packaging/" + unit + ".in");
}

// Under a flood a daemon meets its unit's limits, not the host's. The load
// agent's files are its connections (4096 by default) and its memory its
// rounds' samples, so its bounds are larger.
TEST_F(DeployFiles, UnitsBoundMemoryTasksAndOpenFiles) {
  struct Bounds {
    const char* unit;
    const char* memory;
    const char* tasks;
    const char* files;
  };
  for (const Bounds& b : {Bounds{"nabla-injectd.service", "1G", "64", "4096"},
                          Bounds{"nabla-sniffd.service", "512M", "64", "4096"},
                          Bounds{"nabla-loadd.service", "4G", "256", "16384"}}) {
    const std::string text = unit_text(b.unit);
    EXPECT_EQ(unit_setting(text, "MemoryMax"), b.memory) << b.unit;
    EXPECT_EQ(unit_setting(text, "TasksMax"), b.tasks) << b.unit;
    EXPECT_EQ(unit_setting(text, "LimitNOFILE"), b.files) << b.unit;
  }
}

// The load agent needs no privilege: its own user, no capability (an empty
// CapabilityBoundingSet= is the empty set, not "unchanged"), and every
// protection it tolerates. It writes nothing, so no RuntimeDirectory.
TEST_F(DeployFiles, LoadAgentUnitRunsUnprivilegedAndHardened) {
  const std::string text = unit_text("nabla-loadd.service");
  EXPECT_EQ(unit_setting(text, "User"), "nabla-load");
  EXPECT_EQ(unit_setting(text, "Group"), "nabla");  // reads the node's key, root:nabla 0640
  EXPECT_TRUE(has_setting(text, "CapabilityBoundingSet"));
  EXPECT_EQ(unit_setting(text, "CapabilityBoundingSet"), "");
  EXPECT_TRUE(has_setting(text, "AmbientCapabilities"));
  EXPECT_EQ(unit_setting(text, "AmbientCapabilities"), "");
  EXPECT_FALSE(has_setting(text, "RuntimeDirectory"));
  EXPECT_FALSE(has_setting(text, "DeviceAllow"));
  for (const auto& [key, value] : std::vector<std::pair<std::string, std::string>>{
           {"NoNewPrivileges", "yes"},
           {"ProtectSystem", "strict"},
           {"ProtectHome", "yes"},
           {"PrivateTmp", "yes"},
           {"PrivateDevices", "yes"},
           {"PrivateMounts", "yes"},
           {"ProtectProc", "invisible"},
           {"ProtectKernelTunables", "yes"},
           {"ProtectKernelModules", "yes"},
           {"ProtectKernelLogs", "yes"},
           {"ProtectControlGroups", "yes"},
           {"ProtectClock", "yes"},
           {"ProtectHostname", "yes"},
           {"RestrictNamespaces", "yes"},
           {"RestrictRealtime", "yes"},
           {"RestrictSUIDSGID", "yes"},
           {"LockPersonality", "yes"},
           {"MemoryDenyWriteExecute", "yes"},
           {"RestrictAddressFamilies", "AF_INET AF_INET6 AF_UNIX"},
           {"SystemCallArchitectures", "native"},
           {"SystemCallFilter", "@system-service"},
           {"UMask", "0077"},
       }) {
    EXPECT_EQ(unit_setting(text, key), value) << key;
  }
  EXPECT_NE(text.find("\nSystemCallFilter=~@privileged\n"), std::string::npos);
  // The node's key, as the other daemons: no key of its own to distribute.
  EXPECT_NE(unit_setting(text, "ExecStart").find("--key-file @NABLA_ENV_DIR@/key "),
            std::string::npos)
      << unit_setting(text, "ExecStart");
}

// systemd's own reading of the unit: no capability at all, and a low
// exposure. --offline needs systemd 250 or later.
TEST_F(DeployFiles, LoadAgentUnitHasNoCapabilityBySystemdsReading) {
  NABLA_REQUIRE_PROGRAM_OR_SKIP("systemd-analyze");
  const std::string unit =
      unit_from_template(dir_, "nabla-loadd.service", parent_dir(NABLA_LOADD_PATH));
  const auto r =
      common::run_command({"systemd-analyze", "security", "--offline=yes", "--no-pager", unit});
  if (r.stderr_text.find("offline") != std::string::npos && r.exit_code != 0) {
    GTEST_SKIP() << "this systemd-analyze has no --offline: " << r.stderr_text;
  }
  ASSERT_EQ(r.exit_code, 0) << r.stdout_text << r.stderr_text;
  // Every capability line is a pass ("✓ CapabilityBoundingSet=~CAP_…").
  std::size_t at = 0;
  int capability_lines = 0;
  while ((at = r.stdout_text.find("CapabilityBoundingSet=", at)) != std::string::npos) {
    const auto line_start = r.stdout_text.rfind('\n', at) + 1;
    const std::string line =
        r.stdout_text.substr(line_start, r.stdout_text.find('\n', at) - line_start);
    EXPECT_EQ(line.find("\xe2\x9c\x97"), std::string::npos) << line;  // ✗
    ++capability_lines;
    ++at;
  }
  EXPECT_GT(capability_lines, 5) << r.stdout_text;
  const auto level = r.stdout_text.find("Overall exposure level for nabla-loadd.service: ");
  ASSERT_NE(level, std::string::npos) << r.stdout_text;
  const double exposure = std::stod(r.stdout_text.substr(
      level + std::string("Overall exposure level for nabla-loadd.service: ").size()));
  EXPECT_LE(exposure, 2.0) << r.stdout_text;
}

// Stand-ins for the commands the maintainer scripts run (getent, adduser,
// deluser, delgroup, systemctl, rm, rmdir, find, chgrp, ...): each appends its name and arguments
// to `log`; getent finds the user and group when `found`.
std::string stub_commands(const fs::path& dir, const fs::path& log, bool found) {
  const fs::path bin = dir / (found ? "bin-found" : "bin-missing");
  fs::create_directories(bin);
  for (const char* name : {"getent", "addgroup", "adduser", "deluser", "userdel", "delgroup",
                           "groupdel", "systemctl", "rm", "rmdir", "find", "chgrp"}) {
    const fs::path path = bin / name;
    std::ofstream(path.string()) << "#!/bin/sh\necho \"" << name << " $*\" >> '" << log.string()
                                 << "'\n"
                                 << (std::string(name) == "getent"
                                         ? (found ? "exit 0\n" : "exit 2\n")
                                         : "exit 0\n");
    fs::permissions(path, fs::perms::owner_all);
  }
  return bin.string();
}

common::CommandResult run_script(const std::string& script, const std::string& arg,
                                 const std::string& stub_bin) {
  return common::run_command({"env", "-i", "PATH=" + stub_bin + ":/usr/sbin:/usr/bin:/sbin:/bin",
                              "/bin/sh",
                              std::string(NABLA_SOURCE_DIR) + "/packaging/debian/" + script, arg});
}

// The package makes the agent's user (in group nabla, no home, no shell) on
// install, keeps it on an upgrade, drops it, its unit's enablement,
// /run/nabla and the group on purge, and stops the agent before its
// program goes. (PackageUnderSystemd runs the same scripts for real.)
TEST_F(DeployFiles, MaintainerScriptsMakeAndRemoveTheLoadAgentsUser) {
  const fs::path log = dir_ / "calls.log";
  const std::string missing = stub_commands(dir_, log, false);
  const std::string found = stub_commands(dir_, log, true);

  auto r = run_script("postinst", "configure", missing);
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  std::string calls = common::read_text_file(log.string());
  EXPECT_NE(calls.find("addgroup --system --quiet nabla\n"), std::string::npos) << calls;
  EXPECT_NE(calls.find("adduser --system --quiet --ingroup nabla --no-create-home --home "
                       "/nonexistent --shell /usr/sbin/nologin nabla-load\n"),
            std::string::npos)
      << calls;

  fs::remove(log);
  r = run_script("postinst", "configure", found);  // an upgrade: both exist
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  calls = fs::exists(log) ? common::read_text_file(log.string()) : "";
  EXPECT_EQ(calls.find("adduser"), std::string::npos) << calls;
  EXPECT_EQ(calls.find("addgroup"), std::string::npos) << calls;

  fs::remove(log);
  r = run_script("postrm", "remove", found);  // a remove keeps the user
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  calls = fs::exists(log) ? common::read_text_file(log.string()) : "";
  EXPECT_EQ(calls.find("deluser"), std::string::npos) << calls;

  fs::remove(log);
  r = run_script("postrm", "purge", found);
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  calls = common::read_text_file(log.string());
  EXPECT_NE(calls.find("deluser --system --quiet nabla-load\n"), std::string::npos) << calls;
  EXPECT_NE(calls.find("rm -f /etc/systemd/system/multi-user.target.wants/nabla-loadd.service\n"),
            std::string::npos)
      << calls;
  EXPECT_NE(calls.find("rm -rf /run/nabla\n"), std::string::npos) << calls;
  EXPECT_NE(calls.find("delgroup --system --quiet nabla\n"), std::string::npos) << calls;
  // The user goes before the group, whose primary group it is.
  EXPECT_LT(calls.find("deluser"), calls.find("delgroup")) << calls;

  // prerm stops it only under a running systemd, which this host may lack:
  // the unit is in the same stop as the others.
  const std::string prerm =
      common::read_text_file(std::string(NABLA_SOURCE_DIR) + "/packaging/debian/prerm");
  EXPECT_NE(prerm.find("nabla-sniffd.service nabla-loadd.service"), std::string::npos) << prerm;
  const std::string conffiles =
      common::read_text_file(std::string(NABLA_SOURCE_DIR) + "/packaging/debian/conffiles.in");
  EXPECT_NE(conffiles.find("@NABLA_ENV_DIR@/loadd.env\n"), std::string::npos) << conffiles;
}

// The package CPack builds from this build tree holds the load agent beside
// the other daemons: its program, its unit, its env file as a conffile, and
// the maintainer scripts that make its user (adduser among the Depends).
TEST_F(DeployFiles, PackageHoldsTheLoadAgent) {
  NABLA_REQUIRE_PROGRAM_OR_SKIP("cpack");
  NABLA_REQUIRE_PROGRAM_OR_SKIP("dpkg-deb");
  const auto built = common::run_command(
      {"cpack", "-G", "DEB", "--config", std::string(NABLA_BINARY_DIR) + "/CPackConfig.cmake", "-B",
       (dir_ / "package").string()},
      nullptr, std::chrono::seconds(150));
  ASSERT_EQ(built.exit_code, 0) << built.stdout_text << built.stderr_text;
  std::string deb;
  for (const auto& entry : fs::directory_iterator(dir_ / "package")) {
    if (entry.path().extension() == ".deb") deb = entry.path().string();
  }
  ASSERT_NE(deb, "") << built.stdout_text;

  const auto listing = common::run_command({"dpkg-deb", "--contents", deb});
  ASSERT_EQ(listing.exit_code, 0) << listing.stderr_text;
  for (const char* path :
       {"bin/nabla-loadd\n", "lib/systemd/system/nabla-loadd.service\n", "etc/nabla/loadd.env\n",
        "bin/nabla-injectd\n", "lib/systemd/system/nabla-sniffd.service\n"}) {
    EXPECT_NE(listing.stdout_text.find(path), std::string::npos) << path << listing.stdout_text;
  }
  const auto field = [&](const std::vector<std::string>& args) {
    std::vector<std::string> argv = {"dpkg-deb"};
    argv.insert(argv.end(), args.begin(), args.end());
    const auto r = common::run_command(argv);
    EXPECT_EQ(r.exit_code, 0) << r.stderr_text;
    return r.stdout_text;
  };
  const std::string conffiles = field({"--info", deb, "conffiles"});
  EXPECT_NE(conffiles.find("/etc/nabla/loadd.env\n"), std::string::npos) << conffiles;
  EXPECT_NE(conffiles.find("/etc/nabla/injectd.env\n"), std::string::npos) << conffiles;
  EXPECT_NE(field({"--info", deb, "postinst"}).find("nabla-load"), std::string::npos);
  EXPECT_NE(field({"--info", deb, "postrm"}).find("nabla-load"), std::string::npos);
  EXPECT_NE(field({"--info", deb, "prerm"}).find("nabla-loadd.service"), std::string::npos);
  EXPECT_NE(field({"--field", deb, "Depends"}).find("adduser"), std::string::npos);
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
  // A node gets no load agent.
  EXPECT_EQ(r.stdout_text.find("item=loadd"), std::string::npos) << r.stdout_text;
  EXPECT_EQ(r.stdout_text.find("nabla-loadd.service"), std::string::npos) << r.stdout_text;
  EXPECT_EQ(fs::exists("/etc/nabla/key"), key_existed);  // check mode wrote nothing
  EXPECT_EQ(fs::exists("/etc/nabla/keys"), keys_existed);
}

// The result of the task named `task` in a playbook's output ("" when the
// task is not there).
std::string task_output(const std::string& out, const std::string& task) {
  const auto at = out.find("TASK [" + task);
  if (at == std::string::npos) return "";
  return out.substr(at, out.find("TASK", at + 1) - at);
}

// A client machine of the group load_agents: its own key (the per-node
// default), the agent's user, loadd.env and nabla-loadd.service; none of
// the nodes' env files or units.
TEST_F(DeployFiles, AnsibleCheckRunAsALoadAgent) {
  NABLA_REQUIRE_ROOT_OR_SKIP();
  NABLA_REQUIRE_PROGRAM_OR_SKIP("ansible-playbook");
  const std::string inventory = (dir_ / "inventory.ini").string();
  std::ofstream(inventory) << "[load_agents]\nlocalhost ansible_connection=local "
                              "ansible_python_interpreter=/usr/bin/python3\n";
  const fs::path keys = dir_ / "keys";
  fs::create_directory(keys);
  std::ofstream((keys / "127.0.0.1.key").string()) << std::string(64, 'a') << "\n";
  const std::string deb = (dir_ / "nabla_0.0.0_amd64.deb").string();
  std::ofstream(deb) << "not inspected in check mode\n";
  const bool key_existed = fs::exists("/etc/nabla/key");
  const bool env_existed = fs::exists("/etc/nabla/loadd.env");
  const auto r = common::run_command(
      ansible_argv(dir_, {"-i", inventory, "--check", "--connection", "local", kPlaybook, "-e",
                          "nabla_keys_dir=" + keys.string(), "-e", "nabla_deb=" + deb, "-e",
                          "nabla_listen_address=127.0.0.1", "-e",
                          R"({"nabla_loadd_flags": "--allow-target 127.0.0.0/8"})"}),
      nullptr, std::chrono::seconds(90));
  EXPECT_EQ(r.exit_code, 0) << r.stdout_text << r.stderr_text;
  EXPECT_NE(r.stdout_text.find("failed=0"), std::string::npos) << r.stdout_text;
  for (const char* task : {"This node's own key", "The load agent's own user",
                           "The daemons' listen addresses and flags"}) {
    const std::string result = task_output(r.stdout_text, task);
    ASSERT_NE(result, "") << task << "\n" << r.stdout_text;
    EXPECT_EQ(result.find("skipping"), std::string::npos) << result;
  }
  const std::string env = task_output(r.stdout_text, "The daemons' listen addresses and flags");
  EXPECT_NE(env.find("item=loadd"), std::string::npos) << env;
  EXPECT_EQ(env.find("item=injectd"), std::string::npos) << env;
  EXPECT_EQ(env.find("item=sniffd"), std::string::npos) << env;
  // Skipped here when this host runs no systemd, but named all the same.
  const std::string units = task_output(r.stdout_text, "Enable and start this host's daemons");
  EXPECT_NE(units.find("nabla-loadd.service"), std::string::npos) << units;
  EXPECT_EQ(units.find("nabla-injectd.service"), std::string::npos) << units;
  EXPECT_EQ(units.find("nabla-sniffd.service"), std::string::npos) << units;
  EXPECT_EQ(fs::exists("/etc/nabla/key"), key_existed);  // check mode wrote nothing
  EXPECT_EQ(fs::exists("/etc/nabla/loadd.env"), env_existed);
}

// The template the play writes: the host's address on the agent's port.
TEST_F(DeployFiles, AnsibleLoadAgentTemplateListensOnTheNodesAddress) {
  const std::string text = common::read_text_file(std::string(NABLA_SOURCE_DIR) +
                                                  "/deploy/ansible/templates/loadd.env.j2");
  EXPECT_NE(text.find("NABLA_LOADD_LISTEN={{ nabla_listen_address }}:7313\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("NABLA_LOADD_FLAGS={{ nabla_loadd_flags }}\n"), std::string::npos) << text;
  const std::string inventory = common::read_text_file(std::string(NABLA_SOURCE_DIR) +
                                                       "/deploy/ansible/inventory.example.ini");
  EXPECT_NE(inventory.find("\n[load_agents]\n"), std::string::npos) << inventory;
}

}  // namespace
}  // namespace nabla::testing
