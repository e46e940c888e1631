// RAII network namespaces, veth pairs, commands and children inside them.
#include "nabla/common/netns.hh"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <string>

#include "nabla_test_support.hh"

namespace nabla::common {
namespace {

bool namespace_exists(const std::string& name) {
  struct stat st {};
  return ::stat(("/run/netns/" + name).c_str(), &st) == 0;
}

TEST(RunCommand, CapturesOutputAndExitCode) {
  const CommandResult ok = run_command({"sh", "-c", "echo out; echo err >&2; exit 3"});
  EXPECT_EQ(ok.exit_code, 3);
  EXPECT_EQ(ok.stdout_text, "out\n");
  EXPECT_EQ(ok.stderr_text, "err");
  EXPECT_THROW(run_checked({"false"}), CommandError);
  EXPECT_THROW(run_command({"nabla-no-such-program-xyz"}), std::system_error);
  const CommandResult slow = run_command({"sleep", "5"}, nullptr, std::chrono::milliseconds(100));
  EXPECT_TRUE(slow.timed_out);
}

TEST(NetNamespace, TwoNamespacesJoinedByVethCarryUdpAndVanishAfterwards) {
  NABLA_REQUIRE_ROOT_OR_SKIP();
  std::string name_a;
  std::string name_b;
  {
    NetNamespace a("nsa");
    NetNamespace b("nsb");
    name_a = a.name();
    name_b = b.name();
    EXPECT_EQ(name_a.rfind("nb-" + std::to_string(::getpid()) + "-", 0), 0u);
    EXPECT_TRUE(namespace_exists(name_a));
    VethPair veth(a, "veth-a", b, "veth-b");
    a.add_address("veth-a", "10.201.0.1/24");
    b.add_address("veth-b", "10.201.0.2/24");
    a.set_up("veth-a");
    b.set_up("veth-b");
    // The interface lives only inside the namespaces.
    EXPECT_NE(run_command({"ip", "link", "show", "veth-a"}).exit_code, 0);
    EXPECT_EQ(a.run({"ip", "link", "show", "veth-a"}).exit_code, 0);

    FileDescriptor rx = b.socket(AF_INET, SOCK_DGRAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(9000);
    ::inet_pton(AF_INET, "10.201.0.2", &addr.sin_addr);
    ASSERT_EQ(::bind(rx.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    timeval tv{2, 0};
    ::setsockopt(rx.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    FileDescriptor tx = a.socket(AF_INET, SOCK_DGRAM, 0);
    const char msg[] = "hello";
    ASSERT_EQ(
        ::sendto(tx.get(), msg, sizeof msg, 0, reinterpret_cast<sockaddr*>(&addr), sizeof addr),
        static_cast<ssize_t>(sizeof msg));
    char buf[16] = {};
    ASSERT_EQ(::recv(rx.get(), buf, sizeof buf, 0), static_cast<ssize_t>(sizeof msg));
    EXPECT_STREQ(buf, "hello");
  }
  EXPECT_FALSE(namespace_exists(name_a));
  EXPECT_FALSE(namespace_exists(name_b));
}

TEST(ChildProcess, RunsInsideTheNamespaceAndIsKilledByPid) {
  NABLA_REQUIRE_ROOT_OR_SKIP();
  NetNamespace ns("child");
  const std::string out = "/tmp/nabla-netns-child-" + std::to_string(::getpid()) + ".txt";
  {
    ChildProcess child({"sh", "-c", "ip -o link show; exec sleep 30"}, &ns, out);
    EXPECT_TRUE(child.running());
    ::usleep(300'000);
  }  // destructor: SIGTERM, reap
  // Inside a fresh namespace only lo exists.
  FILE* f = std::fopen(out.c_str(), "r");
  ASSERT_NE(f, nullptr);
  char line[512];
  int lines = 0;
  bool saw_lo = false;
  while (std::fgets(line, sizeof line, f) != nullptr) {
    ++lines;
    saw_lo = saw_lo || std::strstr(line, ": lo:") != nullptr;
  }
  std::fclose(f);
  std::remove(out.c_str());
  EXPECT_EQ(lines, 1);
  EXPECT_TRUE(saw_lo);

  ChildProcess quick({"true"}, nullptr);
  EXPECT_EQ(quick.wait(std::chrono::seconds(5)), 0);
}

TEST(SweepStaleNamespaces, RemovesOnlyNamespacesOfDeadCreators) {
  NABLA_REQUIRE_ROOT_OR_SKIP();
  const pid_t dead = ::fork();
  if (dead == 0) _exit(0);
  ASSERT_GT(dead, 0);
  ::waitpid(dead, nullptr, 0);
  const std::string stale = "nb-" + std::to_string(dead) + "-0-stale";
  run_checked({"ip", "netns", "add", stale});
  NetNamespace live("live");
  EXPECT_GE(sweep_stale_namespaces(), 1u);
  EXPECT_FALSE(namespace_exists(stale));
  EXPECT_TRUE(namespace_exists(live.name()));
}

}  // namespace
}  // namespace nabla::common
