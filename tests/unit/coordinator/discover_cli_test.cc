// `nabla discover` command-line errors: an unreachable sniffd is one line
// naming the node, exit 1; a malformed --node is a usage error, exit 2.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <string>

#include "nabla/common/fd.hh"
#include "nabla/common/netns.hh"

namespace {

using nabla::common::run_command;

// A loopback port with nothing listening: bound (so nobody else takes it)
// but never listened on, so connecting is refused.
uint16_t closed_port(nabla::common::FileDescriptor& holder) {
  holder = nabla::common::FileDescriptor(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(::bind(holder.get(), reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0);
  socklen_t len = sizeof sa;
  ::getsockname(holder.get(), reinterpret_cast<sockaddr*>(&sa), &len);
  return ntohs(sa.sin_port);
}

TEST(DiscoverCli, UnreachableNodeIsOneLineNamingIt) {
  nabla::common::FileDescriptor holder;
  const std::string port = std::to_string(closed_port(holder));
  const auto r =
      run_command({NABLA_BINARY, "discover", "--node", "dbnode=127.0.0.1:" + port, "--for", "0s"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(r.stdout_text.empty()) << r.stdout_text;
  EXPECT_NE(r.stderr_text.find("node dbnode: cannot reach nabla-sniffd at 127.0.0.1:" + port),
            std::string::npos)
      << r.stderr_text;
  // One line (run_command may or may not keep the final newline).
  const size_t nl = r.stderr_text.find('\n');
  EXPECT_TRUE(nl == std::string::npos || nl == r.stderr_text.size() - 1) << r.stderr_text;
}

TEST(DiscoverCli, ANodeNameIsResolvedOnceAndPrinted) {
  nabla::common::FileDescriptor holder;
  const std::string port = std::to_string(closed_port(holder));
  // /etc/hosts names localhost; IPv4 is preferred.
  auto r =
      run_command({NABLA_BINARY, "discover", "--node", "dbnode=localhost:" + port, "--for", "0s"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.stderr_text.find("resolved localhost -> 127.0.0.1\n"), std::string::npos)
      << r.stderr_text;
  EXPECT_NE(r.stderr_text.find("node dbnode: cannot reach nabla-sniffd at 127.0.0.1:" + port),
            std::string::npos)
      << r.stderr_text;
  // A malformed name is a usage error naming the flag, before any lookup.
  r = run_command({NABLA_BINARY, "discover", "--node", "a=web..01:7312", "--for", "0s"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.stderr_text.find("--node: 'web..01:7312'"), std::string::npos) << r.stderr_text;
  // So is a node name given twice, whatever its hosts would resolve to.
  r = run_command({NABLA_BINARY, "discover", "--node", "a=web01.invalid", "--node",
                   "a=web02.invalid", "--for", "0s"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.stderr_text.find("given twice"), std::string::npos) << r.stderr_text;
}

TEST(DiscoverCli, BadNodeAndFormatFlagsAreUsageErrors) {
  auto r = run_command({NABLA_BINARY, "discover", "--node", "127.0.0.1:7312"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.stderr_text.find("NAME=HOST"), std::string::npos) << r.stderr_text;
  r = run_command({NABLA_BINARY, "discover", "--node", "a=127.0.0.1", "--json", "--dot"});
  EXPECT_NE(r.exit_code, 0);
  r = run_command(
      {NABLA_BINARY, "discover", "--node", "a=127.0.0.1", "--node", "a=127.0.0.2", "--for", "0s"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.stderr_text.find("given twice"), std::string::npos) << r.stderr_text;
}

}  // namespace
