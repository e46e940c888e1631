// Sessions through a port forward with the real daemons (--advertise):
// nabla-injectd, nabla-sniffd and nabla-loadd each run in a network
// namespace of the test's own on 127.0.0.1, and a client there reaches them
// through a TCP port forward (tests/support/tcp_forward.hh), as through an
// SSH tunnel or a NAT's port forward. Without --advertise the client
// refuses the daemon, whose identity names the daemon's own address; with
// --advertise naming the forward it authenticates and gets daemon.info
// through it, and a client that connects to the daemon's own address is
// the one refused. Needs root (namespaces, the daemons' sources); the
// namespace, its rules and the daemons go with the test, also on failure.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "nabla/common/netns.hh"
#include "nabla/common/rpc.hh"
#include "nabla/common/rpc_in_namespace.hh"
#include "nabla/common/text_file.hh"
#include "nabla_test_support.hh"
#include "tcp_forward.hh"

namespace nabla::testing {
namespace {

using common::ChildProcess;
using common::NetNamespace;

struct Daemon {
  const char* path;
  const char* kind;  // its kind in session identities
  uint16_t port;
  std::vector<std::string> extra;  // flags it needs here
};

const Daemon kDaemons[] = {
    {NABLA_INJECTD_PATH, "injectd", 7311, {}},
    {NABLA_SNIFFD_PATH, "sniffd", 7312, {}},
    {NABLA_LOADD_PATH, "loadd", 7313, {"--allow-root"}},
};

std::string temp_path(const std::string& what) {
  return ::testing::TempDir() + "nabla-advertise-" + what + "-" + std::to_string(::getpid());
}

// A key file of one key (32 bytes of 0x5a), mode 0600; the key.
common::Key write_key(const std::string& path) {
  {
    std::ofstream out(path);
    for (int i = 0; i < 32; ++i) out << "5a";
    out << "\n";
  }
  ::chmod(path.c_str(), 0600);
  return common::Key(std::vector<uint8_t>(32, 0x5a));
}

// Whether 127.0.0.1:port in `ns` accepts connections within 10 s.
bool accepts_within(const NetNamespace& ns, uint16_t port) {
  for (int i = 0; i < 200; ++i) {
    common::FileDescriptor fd = ns.socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in at{};
    at.sin_family = AF_INET;
    at.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    at.sin_port = htons(port);
    if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&at), sizeof at) == 0) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

nlohmann::json info_at(const NetNamespace& ns, uint16_t port, const Daemon& d,
                       const common::Key& key) {
  return common::call_in_namespace(
      ns, "127.0.0.1", port, d.kind, [&] { return key; }, "daemon.info", nlohmann::json::object());
}

// The client's refusal, naming what the daemon says it is and what it meant.
void expect_refused(const NetNamespace& ns, uint16_t port, const Daemon& d, const common::Key& key,
                    uint16_t says_port) {
  const std::string says = std::string(d.kind) + "@127.0.0.1:" + std::to_string(says_port);
  const std::string meant = std::string(d.kind) + "@127.0.0.1:" + std::to_string(port);
  try {
    info_at(ns, port, d, key);
    ADD_FAILURE() << d.kind << " authenticated at port " << port;
  } catch (const common::RpcConnectionError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("is \"" + says + "\", not " + meant + " as this nabla meant"),
              std::string::npos)
        << msg;
  }
}

// One daemon in `ns` with `flags`, reached through a forward; `check` runs
// while it serves.
template <typename Check>
void with_daemon(const NetNamespace& ns, const Daemon& d, const std::vector<std::string>& flags,
                 Check&& check) {
  std::vector<std::string> argv = {d.path, "--listen", "127.0.0.1:" + std::to_string(d.port)};
  argv.insert(argv.end(), d.extra.begin(), d.extra.end());
  argv.insert(argv.end(), flags.begin(), flags.end());
  const std::string log = temp_path(std::string(d.kind) + ".log");
  {
    ChildProcess daemon(argv, &ns, log);
    ASSERT_TRUE(accepts_within(ns, d.port)) << common::read_text_file(log);
    check();
  }
  ::unlink(log.c_str());
}

TEST(Advertise, EachDaemonAuthenticatesThroughAPortForwardOnlyWhenItIsAdvertised) {
  NABLA_REQUIRE_ROOT_OR_SKIP();
  NetNamespace ns("advertise");
  const std::string key_file = temp_path("key");
  const common::Key key = write_key(key_file);
  for (const Daemon& d : kDaemons) {
    SCOPED_TRACE(d.kind);
    TcpForward forward(d.port, &ns);
    const std::vector<std::string> keyed = {"--key-file", key_file};
    with_daemon(ns, d, keyed, [&] { expect_refused(ns, forward.port(), d, key, d.port); });
    std::vector<std::string> advertised = keyed;
    advertised.insert(advertised.end(),
                      {"--advertise", "127.0.0.1:" + std::to_string(forward.port())});
    with_daemon(ns, d, advertised, [&] {
      EXPECT_TRUE(info_at(ns, forward.port(), d, key).is_object());
      expect_refused(ns, d.port, d, key, forward.port());
    });
  }
  ::unlink(key_file.c_str());
}

TEST(Advertise, ABadAddressIsAUsageErrorNamingTheFlag) {
  for (const Daemon& d : kDaemons) {
    const std::string log = temp_path(std::string(d.kind) + "-usage.log");
    int rc = -1;
    {
      ChildProcess daemon({d.path, "--advertise", "node-a:7311"}, nullptr, log);
      rc = daemon.wait(std::chrono::seconds(10));
    }
    const std::string text = common::read_text_file(log);
    EXPECT_EQ(rc, 2) << d.kind << ": " << text;
    EXPECT_NE(text.find("--advertise: 'node-a' is not an IP address"), std::string::npos)
        << d.kind << ": " << text;
    ::unlink(log.c_str());
  }
}

}  // namespace
}  // namespace nabla::testing
