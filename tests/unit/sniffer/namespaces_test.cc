// The node's network namespaces listed from a fake /run/netns and /proc
// (hard links stand for two paths to one namespace), container ids from
// recorded cgroup paths, and the --netns selection.
#include "nabla/sniffer/namespaces.hh"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>

namespace nabla::sniffer {
namespace {

namespace fs = std::filesystem;

constexpr const char* kDockerId =
    "3f2a9c1d0b7e5a4f3e2d1c0b9a8f7e6d5c4b3a2f1e0d9c8b7a6f5e4d3c2b1a09";

class FakeTree {
 public:
  FakeTree() {
    char pattern[] = "/tmp/nabla-netns-XXXXXX";
    root_ = ::mkdtemp(pattern);
    fs::create_directories(root_ + "/run/netns");
    fs::create_directories(root_ + "/proc");
  }
  ~FakeTree() { fs::remove_all(root_); }
  NamespaceRoots roots() const { return {root_ + "/run/netns", root_ + "/proc"}; }

  // A namespace file under run/netns.
  void named(const std::string& name) { std::ofstream(root_ + "/run/netns/" + name) << name; }
  // A process whose ns/net is the named namespace (a hard link: same inode).
  void process_in(int pid, const std::string& name, const std::string& cgroup = "/user.slice") {
    make_process(pid, cgroup);
    fs::create_hard_link(root_ + "/run/netns/" + name, ns_path(pid));
  }
  // A process in an unnamed namespace of its own, or in `same_as`'s.
  void process(int pid, const std::string& cgroup, int same_as = 0) {
    make_process(pid, cgroup);
    if (same_as != 0) {
      fs::create_hard_link(ns_path(same_as), ns_path(pid));
    } else {
      std::ofstream(ns_path(pid)) << pid;
    }
  }
  std::string ns_path(int pid) const { return root_ + "/proc/" + std::to_string(pid) + "/ns/net"; }

 private:
  void make_process(int pid, const std::string& cgroup) {
    const std::string dir = root_ + "/proc/" + std::to_string(pid);
    fs::create_directories(dir + "/ns");
    std::ofstream(dir + "/cgroup") << "0::" << cgroup << "\n";
  }
  std::string root_;
};

const FoundNamespace* by_pid(const std::vector<FoundNamespace>& list, pid_t pid) {
  for (const auto& ns : list) {
    if (ns.pid == pid) return &ns;
  }
  return nullptr;
}

TEST(ListNamespaces, NamedAndProcessNamespacesOnceEachWithTheLowestPid) {
  FakeTree tree;
  tree.named("web");
  tree.named("empty");
  tree.process_in(40, "web");
  tree.process_in(31, "web");
  tree.process(1, "/init.scope");
  tree.process(7, "/init.scope", 1);
  tree.process(50, std::string("/system.slice/docker-") + kDockerId + ".scope");
  const auto list = list_namespaces(tree.roots());
  ASSERT_EQ(list.size(), 4u);  // empty, web, pid 1's, pid 50's
  EXPECT_EQ(list[0].name, "empty");
  EXPECT_EQ(list[0].pid, 0);
  EXPECT_EQ(list[1].name, "web");
  EXPECT_EQ(list[1].pid, 31);
  EXPECT_EQ(list[1].path, tree.roots().run_netns + "/web");
  EXPECT_NE(list[0].id, list[1].id);
  const FoundNamespace* init = by_pid(list, 1);
  ASSERT_NE(init, nullptr);
  EXPECT_EQ(init->name, "");
  EXPECT_EQ(init->path, tree.ns_path(1));
  EXPECT_EQ(init->container, "");
  const FoundNamespace* container = by_pid(list, 50);
  ASSERT_NE(container, nullptr);
  EXPECT_EQ(container->container, "3f2a9c1d0b7e");
  EXPECT_EQ(by_pid(list, 7), nullptr);  // deduplicated into pid 1's
}

TEST(ListNamespaces, MissingRootsAndVanishedEntriesAreSkipped) {
  EXPECT_TRUE(list_namespaces({"/nonexistent/run/netns", "/nonexistent/proc"}).empty());
  FakeTree tree;
  tree.process(9, "/x");
  fs::create_directories(tree.roots().proc + "/10");  // exited: no ns/net
  fs::create_directories(tree.roots().proc + "/self");
  const auto list = list_namespaces(tree.roots());
  ASSERT_EQ(list.size(), 1u);
  EXPECT_EQ(list[0].pid, 9);
}

TEST(ContainerId, RecordedCgroupPathsOfTheCommonRuntimes) {
  const std::string id = kDockerId;
  const std::string short_id = "3f2a9c1d0b7e";
  const std::pair<std::string, std::string> cases[] = {
      {"/system.slice/docker-" + id + ".scope", short_id},
      {"/docker/" + id, short_id},
      {"/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1a2b.slice/"
       "cri-containerd-" +
           id + ".scope",
       short_id},
      {"/kubepods.slice/kubepods-pod9.slice/crio-" + id + ".scope", short_id},
      {"/machine.slice/libpod-" + id + ".scope/container", short_id},
      {"/kubepods/burstable/pod6f1e/" + id, short_id},
      {"/machine.slice/libpod-conmon-" + id + ".scope", ""},
      {"/system.slice/nginx.service", ""},
      {"/user.slice/user-0.slice/session-1.scope", ""},
      {"/" + id, ""},
      {"/docker/" + id.substr(0, 63), ""},
      {"", ""},
  };
  for (const auto& [path, want] : cases) EXPECT_EQ(container_id_from_cgroup(path), want) << path;
}

TEST(NamespaceSelection, AllSelfOrNames) {
  EXPECT_TRUE(parse_namespace_selection("all").all);
  EXPECT_TRUE(parse_namespace_selection("self").only_own());
  const NamespaceSelection two = parse_namespace_selection("self,web,db");
  EXPECT_FALSE(two.all);
  EXPECT_EQ(two.names, (std::vector<std::string>{"web", "db"}));
  FoundNamespace web;
  web.name = "web";
  FoundNamespace unnamed;
  EXPECT_TRUE(two.selects(web));
  EXPECT_FALSE(two.selects(unnamed));
  EXPECT_TRUE(parse_namespace_selection("all").selects(unnamed));
  for (const char* bad : {"", "web,,db", "a/b", "web,all"}) {
    EXPECT_THROW(parse_namespace_selection(bad), std::invalid_argument) << bad;
  }
}

TEST(NamespaceSelection, AllLeavesOutUserOwnedNamespacesUnlessAsked) {
  FoundNamespace rootless;
  rootless.user_owned = true;
  FoundNamespace named_rootless = rootless;
  named_rootless.name = "web";
  NamespaceSelection all = parse_namespace_selection("all");
  EXPECT_FALSE(all.selects(rootless));
  EXPECT_FALSE(all.selects(named_rootless));
  EXPECT_TRUE(all.selects(FoundNamespace{}));
  all.user_owned = true;
  EXPECT_TRUE(all.selects(rootless));
  // A name given on purpose is scanned whoever owns it.
  EXPECT_TRUE(parse_namespace_selection("web").selects(named_rootless));
}

// A real namespace made with `unshare --user --net` is told apart from this
// process's own, and a plain file (the fake trees' namespaces) is not one.
TEST(UserOwnedNamespace, UnshareUserNetIsOwnedByAnotherUserNamespace) {
  if (std::system("command -v unshare >/dev/null 2>&1") != 0) GTEST_SKIP() << "no unshare";
  char pattern[] = "/tmp/nabla-userns-XXXXXX";
  const std::string dir = ::mkdtemp(pattern);
  const std::string pid_file = dir + "/pid";
  // The child writes its pid from inside the new namespaces, then sleeps;
  // it is killed by that pid (and would end by itself after 20 s).
  const std::string command = "unshare --user --map-root-user --net sh -c 'echo $$ > " + pid_file +
                              "; exec sleep 20' >/dev/null 2>&1 &";
  ASSERT_EQ(std::system(command.c_str()), 0);
  pid_t pid = 0;
  for (int i = 0; i < 200 && pid == 0; ++i) {
    std::ifstream in(pid_file);
    if (!(in >> pid)) pid = 0;
    if (pid == 0) ::usleep(10'000);
  }
  if (pid == 0) {
    fs::remove_all(dir);
    GTEST_SKIP() << "unshare --user --net did not start (user namespaces disabled?)";
  }
  const std::string path = "/proc/" + std::to_string(pid) + "/ns/net";
  const bool theirs = owned_by_other_user_namespace(path);
  const bool ours = owned_by_other_user_namespace("/proc/self/ns/net");
  ::kill(pid, SIGKILL);
  std::ofstream(dir + "/plain") << "not a namespace";
  const bool plain = owned_by_other_user_namespace(dir + "/plain");
  fs::remove_all(dir);
  EXPECT_TRUE(theirs);
  EXPECT_FALSE(ours);
  EXPECT_FALSE(plain);
}

TEST(RootNamespace, SameNamespaceAsPidOne) {
  FakeTree tree;
  const std::string self = tree.roots().proc + "/thread-self/ns/net";
  EXPECT_FALSE(in_root_namespace(tree.roots()));  // nothing to compare
  tree.process(1, "/init.scope");
  fs::create_directories(tree.roots().proc + "/thread-self/ns");
  fs::create_hard_link(tree.ns_path(1), self);
  EXPECT_TRUE(in_root_namespace(tree.roots()));
  fs::remove(self);
  std::ofstream(self) << "other";
  EXPECT_FALSE(in_root_namespace(tree.roots()));
}

TEST(RootNamespace, WithPidOneHiddenANamedNamespaceIsNotTheRoot) {
  FakeTree tree;
  const std::string self = tree.roots().proc + "/thread-self/ns/net";
  fs::create_directories(tree.roots().proc + "/thread-self/ns");
  std::ofstream(self) << "self";
  tree.named("web");
  EXPECT_TRUE(in_root_namespace(tree.roots()));
  fs::remove(self);
  fs::create_hard_link(tree.roots().run_netns + "/web", self);
  EXPECT_FALSE(in_root_namespace(tree.roots()));
}

}  // namespace
}  // namespace nabla::sniffer
