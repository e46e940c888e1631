// The production Daemons (RpcDaemons) against a real RpcServer on loopback
// that stands in for nabla-injectd and nabla-sniffd: the messages keep the
// shapes of docs/protocol.md, the answers are read into the campaign's
// types, a refused lease.renew is not retried, and an unreachable daemon is
// one error naming the node.
#include "nabla/campaign/daemons.hh"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "nabla/common/protocol/injectd.hh"
#include "nabla/common/rpc_auth.hh"

namespace nabla::campaign {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

// A key file of its own for the fake daemons, as every nabla daemon has one:
// a keyless server would be refused by a client that finds a key on this
// machine (no downgrade), so the test would depend on /etc/nabla/key.
class TestKeyFile {
 public:
  TestKeyFile() : path_(fresh_path()), key_(common::generate_key_file(path_)) {}
  ~TestKeyFile() { std::filesystem::remove(path_); }
  const std::string& path() const { return path_; }
  const common::Key& key() const { return key_; }

 private:
  static std::string fresh_path() {
    const auto path = std::filesystem::temp_directory_path() /
                      ("nabla-daemons-test-" + std::to_string(::getpid()) + ".key");
    std::filesystem::remove(path);
    return path.string();
  }

  std::string path_;
  common::Key key_;
};

const TestKeyFile& test_key() {
  static const TestKeyFile file;
  return file;
}

// A session is bound to the kind of daemon meant (common/rpc.hh): a fake
// serves as one kind, "injectd" or "sniffd".
common::RpcServerOptions keyed_options(const std::string& daemon) {
  common::RpcServerOptions o;
  o.keys.push_back(test_key().key());
  o.daemon = daemon;
  return o;
}

// One loopback server of one kind answering both daemons' methods,
// recording every call.
common::RpcServerOptions with_idle_timeout(common::RpcServerOptions o,
                                           std::chrono::milliseconds idle_timeout) {
  o.idle_timeout = idle_timeout;
  return o;
}

// The owner token of a call's params, checked to be a run's ("run-" and 16
// hex digits), and the params without it.
std::pair<std::string, json> split_owner(json params) {
  const std::string owner = params.value("owner", "");
  EXPECT_EQ(owner.size(), 20u) << params;
  EXPECT_EQ(owner.rfind("run-", 0), 0u) << params;
  EXPECT_EQ(owner.find_first_not_of("0123456789abcdef", 4), std::string::npos) << params;
  params.erase("owner");
  return {owner, params};
}

class FakeDaemonServer {
 public:
  explicit FakeDaemonServer(const std::string& daemon = "injectd",
                            std::chrono::milliseconds idle_timeout = 600'000ms)
      : FakeDaemonServer(with_idle_timeout(keyed_options(daemon), idle_timeout)) {}
  explicit FakeDaemonServer(common::RpcServerOptions options) : server_(io_, std::move(options)) {
    server_.add_method("flows.list", [this](const json& p) {
      record("flows.list", p);
      std::this_thread::sleep_for(answer_delay_.load());  // as slow as the rest
      const json flow = {
          {"proto", "tcp"},
          {"local", {{"addr", "10.0.0.1"}, {"port", 0}, {"pid", 7}, {"comm", "c"}}},
          {"remote", {{"addr", "10.0.0.2"}, {"port", 9002}}},
          {"direction", "outbound"},
          {"control", false},
          {"total",
           {{"segments_out", 3}, {"segments_in", 4}, {"bytes_out", 300}, {"bytes_in", 400}}}};
      return json{{"cursor", 12}, {"flows", json::array({flow})}};
    });
    server_.add_method("inject.start", [this](const json& p) {
      record("inject.start", p);
      std::this_thread::sleep_for(answer_delay_.load());
      common::protocol::InjectionDescription started;
      started.id = "inj-9";
      started.link = p.at("link");
      started.delay = common::protocol::Wave::from_json(p.at("delay"), "delay");
      return started.to_json();
    });
    server_.add_method("inject.stop", [this](const json& p) {
      record("inject.stop", p);
      std::this_thread::sleep_for(answer_delay_.load());
      common::protocol::InjectStopResult stopped;
      stopped.injection.id = p.at("id");
      common::protocol::InjectionStats stats;
      stats.counters.packets = 40;
      stats.counters.bytes = 4000;
      stats.counters.delayed = 20;
      stats.counters.dropped = 1;
      stats.actual_delay = {20, 5e5, 2e3, 500'000, 900'000, 0, 1'000'000};
      stats.high = {20, 1e6, 0, 1'000'000, 1'000'000, 1'000'000, 1'000'000};
      stopped.stats = stats;  // low: no packet while the wave was low
      return stopped.to_json();
    });
    server_.add_method("lease.renew", [this](const json& p) -> json {
      record("lease.renew", p);
      throw common::RpcError(-32602, "unknown injection " + p.at("id").get<std::string>());
    });
    thread_ = std::thread([this] { io_.run(); });
  }
  ~FakeDaemonServer() {
    server_.stop();
    thread_.join();
  }
  std::uint16_t port() const { return server_.port(); }
  // How long inject.start, inject.stop and flows.list take to answer.
  void answer_after(std::chrono::milliseconds delay) { answer_delay_ = delay; }
  std::vector<std::pair<std::string, json>> calls() {
    std::lock_guard lock(mutex_);
    return calls_;
  }

 private:
  void record(const std::string& method, const json& params) {
    std::lock_guard lock(mutex_);
    calls_.emplace_back(method, params);
  }

  std::atomic<std::chrono::milliseconds> answer_delay_{0ms};
  asio::io_context io_;
  common::RpcServer server_;
  std::thread thread_;
  std::mutex mutex_;
  std::vector<std::pair<std::string, json>> calls_;
};

CampaignSpec spec_with(const std::string& injectd, const std::string& sniffd) {
  return parse_campaign_spec(R"(
name = "daemons"
key_file = ")" + test_key().path() +
                             R"("
[[node]]
name = "web"
address = "10.0.0.1"
injectd = ")" + injectd + R"("
)" + (sniffd.empty() ? "" : "sniffd = \"" + sniffd + "\"\n") +
                             R"([workload]
target = "http://10.0.0.2:9002"
rate = 10
[links]
discover = false
include = ["tcp 10.0.0.1 -> 10.0.0.2:9002"]
)");
}

TEST(RpcDaemons, MessagesKeepTheProtocolShapes) {
  FakeDaemonServer server;
  FakeDaemonServer sniffd("sniffd");
  const CampaignSpec spec = spec_with("127.0.0.1:" + std::to_string(server.port()),
                                      "127.0.0.1:" + std::to_string(sniffd.port()));
  RpcDaemons daemons(spec, 3000ms);

  const std::optional<FlowsPage> page = daemons.list_flows("web", 5);
  ASSERT_TRUE(page.has_value());
  EXPECT_EQ(page->cursor, 12u);
  ASSERT_EQ(page->flows.size(), 1u);
  EXPECT_EQ(page->flows[0].remote_port, 9002);
  EXPECT_EQ(page->flows[0].bytes_in, 400u);

  const InjectionRequest request{
      "tcp 10.0.0.1:* -> 10.0.0.2:9002", 2'000'000, 80'000'000, 1, 1'500'000'000, 77};
  EXPECT_EQ(daemons.start_injection("web", request), "inj-9");
  const InjectionStats s = daemons.stop_injection("web", "inj-9");
  EXPECT_EQ(s.packets, 40);
  EXPECT_EQ(s.bytes, 4000);
  EXPECT_EQ(s.delayed, 20);
  EXPECT_EQ(s.dropped, 1);
  EXPECT_EQ(s.high.count, 20u);
  EXPECT_EQ(s.high.mean_ns, 1e6);
  EXPECT_EQ(s.low.count, 0u);
  EXPECT_EQ(s.low.mean_ns, 0.0);  // no packet: 0
  EXPECT_EQ(s.actual_std_ns, 2e3);
  EXPECT_EQ(s.actual_p50_ns, 5e5);
  EXPECT_EQ(s.actual_p99_ns, 9e5);
  EXPECT_EQ(s.actual_max_ns, 1e6);

  const auto listed = sniffd.calls();
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_EQ(listed[0].second,
            (json{{"since", 5}, {"min_messages", 1}, {"include_control", false}}));
  const auto calls = server.calls();
  ASSERT_EQ(calls.size(), 2u);
  const auto [owner, start] = split_owner(calls[0].second);
  EXPECT_EQ(start, (json{{"link", "tcp 10.0.0.1:* -> 10.0.0.2:9002"},
                         {"direction", "out"},
                         {"delay",
                          {{"kind", "square"},
                           {"amplitude", 2'000'000},
                           {"period", 80'000'000},
                           {"duty", 0.5},
                           {"phase", 0},
                           {"cycles", 1}}},
                         {"lease_s", 1.5},
                         {"seed", 77},
                         // The campaign's step is the measured one: no polling for it.
                         {"release", "sleep"}}));
  EXPECT_EQ(calls[1].second, (json{{"id", "inj-9"}, {"owner", owner}}));  // the same session
}

TEST(RpcDaemons, AConnectionClosedAsIdleIsReopenedAndKeepsTheRunsOwner) {
  FakeDaemonServer server("injectd", 200ms);
  FakeDaemonServer sniffd("sniffd", 200ms);
  const CampaignSpec spec = spec_with("127.0.0.1:" + std::to_string(server.port()),
                                      "127.0.0.1:" + std::to_string(sniffd.port()));
  RpcDaemons daemons(spec, 3000ms);  // RpcDaemons keeps its nodes
  const InjectionRequest request{
      "tcp 10.0.0.1:* -> 10.0.0.2:9002", 2'000'000, 80'000'000, 1, 1'500'000'000, 77};
  EXPECT_EQ(daemons.start_injection("web", request), "inj-9");
  std::this_thread::sleep_for(1000ms);  // both connections idle past 200 ms: closed
  EXPECT_TRUE(daemons.list_flows("web", 0).has_value());
  EXPECT_EQ(daemons.stop_injection("web", "inj-9").packets, 40);
  EXPECT_EQ(sniffd.calls().size(), 1u);
  const auto calls = server.calls();
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls[1].first, "inject.stop");
  EXPECT_EQ(calls[1].second.at("owner"), calls[0].second.at("owner"));
}

// A daemon changing its packet filter on a busy machine answers inject.start
// and inject.stop after the control timeout; the run waits for them
// (kRuleChangeTimeout), while other calls keep the control timeout.
TEST(RpcDaemons, RuleChangesMayOutlastTheControlTimeout) {
  FakeDaemonServer server;
  FakeDaemonServer sniffd("sniffd");
  const CampaignSpec spec = spec_with("127.0.0.1:" + std::to_string(server.port()),
                                      "127.0.0.1:" + std::to_string(sniffd.port()));
  RpcDaemons daemons(spec, 200ms);
  server.answer_after(600ms);
  const InjectionRequest request{
      "tcp 10.0.0.1:* -> 10.0.0.2:9002", 2'000'000, 80'000'000, 1, 1'500'000'000, 77};
  EXPECT_EQ(daemons.start_injection("web", request), "inj-9");
  EXPECT_EQ(daemons.stop_injection("web", "inj-9").packets, 40);
  sniffd.answer_after(600ms);
  EXPECT_THROW(daemons.list_flows("web", 0), std::exception);
}

TEST(RpcDaemons, ANodeWithoutSniffdListsNoFlows) {
  FakeDaemonServer server;
  RpcDaemons daemons(spec_with("127.0.0.1:" + std::to_string(server.port()), ""), 3000ms);
  EXPECT_FALSE(daemons.list_flows("web", 0).has_value());
  EXPECT_TRUE(server.calls().empty());
}

TEST(RpcDaemons, ARefusedRenewalIsNotRetried) {
  FakeDaemonServer server;
  RpcDaemons daemons(spec_with("127.0.0.1:" + std::to_string(server.port()), ""), 3000ms);
  EXPECT_THROW(daemons.renew_lease("web", "inj-3"), common::RpcError);
  const auto calls = server.calls();
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].first, "lease.renew");
  EXPECT_EQ(split_owner(calls[0].second).second, (json{{"id", "inj-3"}}));
}

// Keys per node: the campaign's key_file names a key directory, and each
// node's injectd is reached with the key in its HOST.key. Node B holding
// another key than the coordinator's file for it is one error naming the
// node and the key.
TEST(RpcDaemons, EachNodeIsReachedWithItsOwnKeyFromTheKeyDirectory) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("nabla-daemons-keys-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directory(dir);
  const common::Key key_a = common::generate_key_file((dir / "127.0.0.1.key").string());
  const common::Key key_b = common::generate_key_file((dir / "127.0.0.2.key").string());
  const auto node_options = [](const std::string& address, const common::Key& key) {
    common::RpcServerOptions o;
    o.listen_address = address;
    o.keys = {key};
    o.daemon = "injectd";
    return o;
  };
  std::uint16_t server_a_port = 0;
  std::uint16_t server_b_port = 0;
  const auto spec = [&] {
    return parse_campaign_spec(R"(
name = "keys"
key_file = ")" + dir.string() + R"("
[[node]]
name = "a"
address = "10.0.0.1"
injectd = "127.0.0.1:)" + std::to_string(server_a_port) +
                               R"("
[[node]]
name = "b"
address = "10.0.0.2"
injectd = "127.0.0.2:)" + std::to_string(server_b_port) +
                               R"("
[workload]
target = "http://10.0.0.2:9002"
rate = 10
[links]
discover = false
include = ["tcp 10.0.0.1 -> 10.0.0.2:9002"]
)");
  };
  {
    FakeDaemonServer a(node_options("127.0.0.1", key_a));
    FakeDaemonServer b(node_options("127.0.0.2", key_b));
    server_a_port = a.port();
    server_b_port = b.port();
    const CampaignSpec s = spec();
    RpcDaemons daemons(s, 3000ms);
    const InjectionRequest request{
        "tcp 10.0.0.1:* -> 10.0.0.2:9002", 2'000'000, 80'000'000, 1, 1'500'000'000, 77};
    EXPECT_EQ(daemons.start_injection("a", request), "inj-9");
    EXPECT_EQ(daemons.start_injection("b", request), "inj-9");
    EXPECT_EQ(a.calls().size(), 1u);
    EXPECT_EQ(b.calls().size(), 1u);
  }
  {
    // Node b holds node a's key: the coordinator's key for b is refused.
    FakeDaemonServer a(node_options("127.0.0.1", key_a));
    FakeDaemonServer b(node_options("127.0.0.2", key_a));
    server_a_port = a.port();
    server_b_port = b.port();
    const CampaignSpec s = spec();
    try {
      RpcDaemons daemons(s, 3000ms);
      FAIL() << "node b accepted a key that is not its own";
    } catch (const std::runtime_error& e) {
      const std::string msg = e.what();
      EXPECT_EQ(msg.rfind("node b: cannot reach nabla-injectd at 127.0.0.2:", 0), 0u) << msg;
      EXPECT_NE(msg.find("authentication failed: wrong key: key '" + common::key_id(key_b) +
                         "' is not a key of injectd@127.0.0.2:" + std::to_string(server_b_port)),
                std::string::npos)
          << msg;
    }
    EXPECT_TRUE(b.calls().empty());
  }
  std::filesystem::remove_all(dir);
}

TEST(RpcDaemons, AnUnreachableDaemonIsOneErrorNamingTheNode) {
  // Port 1 on loopback: nothing listens, the connection is refused at once.
  try {
    RpcDaemons daemons(spec_with("127.0.0.1:1", ""), 3000ms);
    FAIL() << "connected to port 1";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(
        std::string(e.what()).rfind("node web: cannot reach nabla-injectd at 127.0.0.1:1: ", 0), 0u)
        << e.what();
  }
}

}  // namespace
}  // namespace nabla::campaign
