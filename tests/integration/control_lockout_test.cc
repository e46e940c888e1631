// Hostile or careless peers cannot lock the coordinator out of a daemon's
// control port (common/rpc.hh): a real nabla-injectd in the receiver
// namespace listens on 10.77.0.2 with a key; from the sender namespace one
// address, 10.77.0.3, keeps 128 silent sockets open against the port,
// reopening all of them about every 3 s, while the coordinator's address,
// 10.77.0.1, makes its requests, each on a fresh authenticated connection.
// Every one of them is answered: the silent peer holds at most its share of
// unauthenticated connections and the rest are closed at once. Everything
// runs in the test's own namespaces, removed on exit.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "nabla/common/fd.hh"
#include "nabla/common/local_keys.hh"
#include "nabla/common/netns.hh"
#include "nabla/common/rpc.hh"
#include "nabla/common/rpc_auth.hh"
#include "nabla/common/rpc_in_namespace.hh"
#include "nabla/common/text_file.hh"
#include "nabla/testbed/injector_testbed.hh"
#include "nabla_test_support.hh"

namespace nabla::testing {
namespace {

using common::ChildProcess;
using common::FileDescriptor;
using common::NetNamespace;
using namespace std::chrono_literals;

constexpr const char* kSilentPeer = "10.77.0.3";
constexpr uint16_t kPort = 7311;
constexpr int kSilentSockets = 128;
constexpr int kRequests = 30;

std::string temp_path(const std::string& what) {
  return ::testing::TempDir() + "nabla-lockout-" + what + "-" + std::to_string(::getpid());
}

sockaddr_in address(const char* ip, uint16_t port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  ::inet_pton(AF_INET, ip, &a.sin_addr);
  return a;
}

// One silent socket from kSilentPeer to the daemon (connect in progress or
// done; nothing is ever sent).
FileDescriptor silent_socket(const NetNamespace& ns) {
  FileDescriptor fd = ns.socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  const sockaddr_in from = address(kSilentPeer, 0);
  const sockaddr_in to = address(testbed::kReceiverIp, kPort);
  if (::bind(fd.get(), reinterpret_cast<const sockaddr*>(&from), sizeof from) == 0) {
    ::connect(fd.get(), reinterpret_cast<const sockaddr*>(&to), sizeof to);
  }
  return fd;
}

// Opens kSilentSockets sockets, holds them about 3 s, closes and reopens
// them, until `stop` (or 40 rounds).
class SilentPeer {
 public:
  explicit SilentPeer(const NetNamespace& ns)
      : thread_([this, &ns] {
          for (int round = 0; round < 40 && !stop_; ++round) {
            std::vector<FileDescriptor> sockets;
            for (int i = 0; i < kSilentSockets; ++i) sockets.push_back(silent_socket(ns));
            ++rounds_;
            for (int tick = 0; tick < 60 && !stop_; ++tick) std::this_thread::sleep_for(50ms);
          }
        }) {}
  ~SilentPeer() {
    stop_ = true;
    thread_.join();
  }
  int rounds() const { return rounds_; }

 private:
  std::atomic<bool> stop_{false};
  std::atomic<int> rounds_{0};
  std::thread thread_;
};

bool wait_for_line(const std::string& log, const std::string& needle) {
  for (int i = 0; i < 200; ++i) {
    if (common::read_text_file(log).find(needle) != std::string::npos) return true;
    std::this_thread::sleep_for(50ms);
  }
  return false;
}

TEST(ControlLockout, SilentSocketsFromOnePeerDoNotStopAnotherPeersRequests) {
  NABLA_REQUIRE_ROOT_OR_SKIP();
  testbed::InjectorTestbed bed;
  bed.sender().add_address("nb-snd0", std::string(kSilentPeer) + "/24");
  const std::string key_path = temp_path("key");
  const common::Key key = common::generate_key_file(key_path);
  const std::string log = temp_path("injectd.log");
  int answered = 0;
  nlohmann::json last_info;
  std::vector<std::string> failures;
  {
    ChildProcess daemon({NABLA_INJECTD_PATH, "--listen",
                         std::string(testbed::kReceiverIp) + ":" + std::to_string(kPort),
                         "--key-file", key_path, "--queue-num", "60", "--log-level", "info"},
                        &bed.receiver(), log);
    ASSERT_TRUE(wait_for_line(log, "listening on")) << common::read_text_file(log);
    const common::RpcClient::KeySource key_source = [&key] { return key; };
    {
      SilentPeer peer(bed.sender());
      for (int i = 0; i < 500 && peer.rounds() < 1; ++i) std::this_thread::sleep_for(10ms);
      ASSERT_GE(peer.rounds(), 1) << "the silent peer opened no sockets within 5 s";
      std::this_thread::sleep_for(200ms);  // its sockets are accepted or refused by now
      // 30 requests 250 ms apart: about 7.5 s, across at least two reopenings.
      for (int i = 0; i < kRequests; ++i) {
        try {
          const auto info = common::call_in_namespace(bed.sender(), testbed::kReceiverIp, kPort,
                                                      common::kInjectdKeyName, key_source,
                                                      "daemon.info", nlohmann::json::object(), 5s);
          if (info.contains("pid")) ++answered;
          last_info = info;
        } catch (const std::exception& e) {
          failures.push_back(e.what());
        }
        std::this_thread::sleep_for(250ms);
      }
      EXPECT_GE(peer.rounds(), 3);
    }
    EXPECT_TRUE(daemon.running());
    daemon.signal(SIGTERM);
    EXPECT_EQ(daemon.wait(10s), 0) << common::read_text_file(log);
  }
  EXPECT_EQ(answered, kRequests) << (failures.empty() ? "" : failures.front());
  // The silent peer met the per-peer limit, not the connection limit, and
  // daemon.info says so.
  ASSERT_TRUE(last_info.contains("control")) << last_info.dump();
  EXPECT_GT(last_info["control"]["refused_per_peer"].get<uint64_t>(), 0u);
  EXPECT_EQ(last_info["control"]["refused_full"], 0);
  const std::string text = common::read_text_file(log);
  EXPECT_NE(text.find("unauthenticated connections"), std::string::npos) << text;
  EXPECT_EQ(text.find("already open"), std::string::npos) << text;
  ::unlink(log.c_str());
  ::unlink(key_path.c_str());
}

}  // namespace
}  // namespace nabla::testing
