// No unauthenticated local control: a real nabla-injectd started without
// --key-file on loopback serves with a fresh key in its run file, and
// `nabla inject --node 127.0.0.1:7311` gets through as root and as a member
// of group nabla, while an unprivileged user is refused with one line
// naming the file, exit 1, and the daemon starts nothing for it.
// The unprivileged runs are `setpriv` as nobody; no user is created, and the
// group nabla only when missing (deleted again at the end).
#include <grp.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "nabla/common/netns.hh"
#include "nabla/common/rpc_auth.hh"
#include "nabla/common/text_file.hh"
#include "nabla/testbed/injector_testbed.hh"
#include "nabla_test_support.hh"

namespace nabla::testing {
namespace {

using common::ChildProcess;
using testbed::InjectorTestbed;

constexpr const char* kNobody = "65534";

// The group nabla for the test's life: created (and later deleted) only
// when the host has none.
class KeyGroup {
 public:
  KeyGroup() {
    if (!common::group_id(common::kKeyGroup)) {
      created_ = common::run_command({"groupadd", "--system", common::kKeyGroup}).exit_code == 0;
    }
    gid_ = common::group_id(common::kKeyGroup);
  }
  ~KeyGroup() {
    if (!created_) return;
    common::run_command({"groupdel", common::kKeyGroup});
    // The run directory must not keep a group id that may be reused.
    ::chown("/run/nabla", 0, 0);
  }
  std::optional<unsigned> gid() const { return gid_; }

 private:
  bool created_ = false;
  std::optional<unsigned> gid_;
};

struct CliRun {
  int exit_code;
  std::string output;
};

// `nabla inject` in the daemon's namespace, prefixed by `as` (setpriv ...).
CliRun inject_as(InjectorTestbed& bed, std::vector<std::string> as, const std::string& tag) {
  const std::string out =
      ::testing::TempDir() + "nabla-local-control-" + tag + "-" + std::to_string(::getpid());
  std::vector<std::string> argv = std::move(as);
  argv.insert(argv.end(), {NABLA_PATH, "inject", "--node", "127.0.0.1:7311", "--link",
                           "udp 10.77.0.1 -> 10.77.0.2:9999", "--delay", "5ms", "--for", "200ms"});
  ChildProcess cli(argv, &bed.sender(), out);
  CliRun run{cli.wait(std::chrono::seconds(10)), common::read_text_file(out)};
  ::unlink(out.c_str());
  return run;
}

std::size_t injections(InjectorTestbed& bed) {
  return bed.call("inject.list", nlohmann::json::object())["injections"].size();
}

TEST(LocalControl, OnlyRootAndGroupNablaControlALoopbackDaemon) {
  NABLA_REQUIRE_ROOT_OR_SKIP();
  if (program_on_path("setpriv").empty()) GTEST_SKIP() << "setpriv (util-linux) is missing";
  struct stat st {};
  if (::stat("/etc/nabla/key", &st) == 0) {
    GTEST_SKIP() << "/etc/nabla/key exists: the daemon would serve with it, not a run file";
  }
  KeyGroup group;  // before the daemon: it gives its run file to the group
  ASSERT_TRUE(group.gid()) << "cannot create group " << common::kKeyGroup;
  InjectorTestbed bed;
  bed.start_daemon();  // no --key-file

  const CliRun nobody = inject_as(
      bed, {"setpriv", "--reuid", kNobody, "--regid", kNobody, "--clear-groups"}, "nobody");
  EXPECT_EQ(nobody.exit_code, 1) << nobody.output;
  EXPECT_NE(nobody.output.find("nabla: error: 127.0.0.1:7311 requires a key: cannot read "
                               "/run/nabla/injectd-7311-net"),
            std::string::npos)
      << nobody.output;
  EXPECT_NE(nobody.output.find(".key (permission denied); run as root, join group nabla, or pass "
                               "--key-file\n"),
            std::string::npos)
      << nobody.output;
  EXPECT_EQ(injections(bed), 0u);

  const CliRun root = inject_as(bed, {}, "root");
  EXPECT_EQ(root.exit_code, 0) << root.output;
  EXPECT_NE(root.output.find("injection "), std::string::npos) << root.output;

  const CliRun member = inject_as(
      bed,
      {"setpriv", "--reuid", kNobody, "--regid", kNobody, "--groups", std::to_string(*group.gid())},
      "member");
  EXPECT_EQ(member.exit_code, 0) << member.output;
  EXPECT_EQ(injections(bed), 0u);  // both ran to --for and stopped
}

}  // namespace
}  // namespace nabla::testing
