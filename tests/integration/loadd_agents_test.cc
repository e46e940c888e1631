// nabla-loadd end to end: real agent processes on loopback (dropped to
// nobody when the test runs as root: an agent needs no privilege), each
// with a key file in a scratch directory, loading an echo server in this
// process; the coordinator's AgentPool drives them.
//   - a round on two agents returns the requested counts, merged;
//   - a round nobody polls lapses and its load stops;
//   - bad params and unauthenticated clients get one clear error and the
//     agent serves on;
//   - an agent killed mid-round makes the runner throw AgentFailure naming
//     it, and the other agent's load is stopped;
//   - an agent started as root with --allow-root holds no capability in any
//     thread (CapEff, CapPrm, CapBnd, CapInh, CapAmb all 0, NoNewPrivs 1)
//     and still serves a round.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "nabla/common/clock.hh"
#include "nabla/common/json_rpc.hh"
#include "nabla/common/local_keys.hh"
#include "nabla/common/netns.hh"
#include "nabla/common/rpc.hh"
#include "nabla/common/rpc_auth.hh"
#include "nabla/common/rpc_frame.hh"
#include "nabla/loadd/agents.hh"
#include "nabla/loadd/protocol.hh"
#include "nabla/loadgen/wire.hh"
#include "nabla/tier/echo_server.hh"
#include "scratch_dir.hh"

namespace nabla::loadd {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

constexpr uid_t kNobody = 65534;

// One nabla-loadd child: started with its flags, its port read from the
// "nabla-loadd listening on HOST port N" line, SIGKILLed (if still there)
// and reaped by pid when the object dies.
class LoaddProcess {
 public:
  // `as_root`: stays root when the test is (with --allow-root in `extra`).
  LoaddProcess(const std::string& key_file, std::vector<std::string> extra = {},
               bool as_root = false) {
    std::vector<std::string> args{NABLA_LOADD_PATH, "--listen",    "127.0.0.1:0", "--key-file",
                                  key_file,         "--log-level", "warn"};
    args.insert(args.end(), extra.begin(), extra.end());
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) return;
    pid_ = ::fork();
    if (pid_ == 0) {
      ::dup2(fds[1], STDOUT_FILENO);
      if (::geteuid() == 0 && !as_root && (::setgid(kNobody) != 0 || ::setuid(kNobody) != 0))
        ::_exit(126);
      ::execv(argv[0], argv.data());
      ::_exit(127);
    }
    ::close(fds[1]);
    port_ = read_port(fds[0]);
    ::close(fds[0]);
  }
  ~LoaddProcess() { kill(SIGTERM); }
  LoaddProcess(const LoaddProcess&) = delete;
  LoaddProcess& operator=(const LoaddProcess&) = delete;

  // Signals and reaps it (bounded: SIGKILL after 5 s).
  void kill(int signo) {
    if (pid_ <= 0) return;
    ::kill(pid_, signo);
    int status = 0;
    for (int i = 0; i < 500; ++i) {
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return;
      }
      std::this_thread::sleep_for(10ms);
    }
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
  }
  uint16_t port() const { return port_; }
  pid_t pid() const { return pid_; }
  AgentAddress address() const { return {"127.0.0.1", port_, loadgen::AgentKind::kSymmetric}; }

 private:
  static uint16_t read_port(int fd) {
    std::string line;
    pollfd p{fd, POLLIN, 0};
    const auto deadline = std::chrono::steady_clock::now() + 5s;
    while (line.find('\n') == std::string::npos && std::chrono::steady_clock::now() < deadline) {
      if (::poll(&p, 1, 100) <= 0) continue;
      char buf[256];
      const ssize_t n = ::read(fd, buf, sizeof buf);
      if (n <= 0) break;
      line.append(buf, static_cast<size_t>(n));
    }
    const auto at = line.find(" port ");
    return at == std::string::npos ? 0 : static_cast<uint16_t>(std::stoi(line.substr(at + 6)));
  }

  pid_t pid_ = -1;
  uint16_t port_ = 0;
};

// The uid a process runs as (/proc/PID/status), or -1.
long uid_of(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("Uid:", 0) == 0) return std::stol(line.substr(4));
  }
  return -1;
}

// "Name:\tvalue" lines of /proc/PID/task/TID/status for every thread of
// `pid`, one map per thread.
std::vector<std::map<std::string, std::string>> thread_statuses(pid_t pid) {
  std::vector<std::map<std::string, std::string>> out;
  const std::string tasks = "/proc/" + std::to_string(pid) + "/task";
  for (const auto& task : std::filesystem::directory_iterator(tasks)) {
    std::ifstream in(task.path() / "status");
    std::map<std::string, std::string> fields;
    for (std::string line; std::getline(in, line);) {
      const auto colon = line.find(':');
      if (colon == std::string::npos) continue;
      const auto value = line.find_first_not_of(" \t", colon + 1);
      fields[line.substr(0, colon)] = value == std::string::npos ? "" : line.substr(value);
    }
    if (fields.count("CapEff") != 0) out.push_back(std::move(fields));  // else it just exited
  }
  return out;
}

// Every thread of `pid` as root without a single capability, as the unit's
// empty CapabilityBoundingSet= and NoNewPrivileges=yes leave it; how many
// threads there were.
std::size_t expect_root_without_capabilities(pid_t pid) {
  const auto threads = thread_statuses(pid);
  for (const auto& t : threads) {
    const std::string where = "thread " + t.at("Pid") + " (" + t.at("Name") + "): ";
    EXPECT_EQ(t.at("Uid").substr(0, 1), "0") << where << t.at("Uid");
    for (const char* set : {"CapEff", "CapPrm", "CapBnd", "CapInh", "CapAmb"}) {
      EXPECT_EQ(t.at(set), "0000000000000000") << where << set;
    }
    EXPECT_EQ(t.at("NoNewPrivs"), "1") << where;
  }
  return threads.size();
}

// Reads one frame (4-byte big-endian length, payload) within 3 s; "" on
// failure.
std::string read_frame(int fd) {
  std::string data;
  const auto deadline = std::chrono::steady_clock::now() + 3s;
  while (std::chrono::steady_clock::now() < deadline) {
    if (data.size() >= 4) {
      const std::size_t n = (std::size_t{static_cast<uint8_t>(data[0])} << 24) |
                            (std::size_t{static_cast<uint8_t>(data[1])} << 16) |
                            (std::size_t{static_cast<uint8_t>(data[2])} << 8) |
                            static_cast<uint8_t>(data[3]);
      if (data.size() >= 4 + n) return data.substr(4, n);
    }
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) continue;
    char buf[4096];
    const ssize_t got = ::read(fd, buf, sizeof buf);
    if (got <= 0) break;
    data.append(buf, static_cast<std::size_t>(got));
  }
  return "";
}

// Connects, skips the challenge and sends daemon.info without
// authenticating; returns the answer.
json raw_request_before_auth(uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(port);
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  json answer;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof to) == 0 && !read_frame(fd).empty()) {
    const std::string frame =
        common::encode_frame(json{{"jsonrpc", "2.0"}, {"id", 1}, {"method", "daemon.info"}}.dump());
    if (::write(fd, frame.data(), frame.size()) == static_cast<ssize_t>(frame.size())) {
      answer = json::parse(read_frame(fd), nullptr, false);
    }
  }
  ::close(fd);
  return answer;
}

class LoaddAgents : public ::testing::Test {
 protected:
  LoaddAgents() : dir_("nabla-loadd-test") {
    key_path_ = dir_.file("key");
    key_.emplace(common::generate_key_file(key_path_));
    if (::geteuid() == 0) {
      // The agents run as nobody and read their key themselves.
      EXPECT_EQ(::chown(key_path_.c_str(), kNobody, kNobody), 0);
    }
  }

  common::RpcClient client(uint16_t port) {
    return common::RpcClient::connect("127.0.0.1", port, *key_, 3s, common::kLoaddKeyName);
  }

  AgentPoolOptions pool_options() {
    AgentPoolOptions o;
    o.owner = "test-" + std::to_string(::getpid());
    o.lease = 2s;
    o.key_for = [this](const AgentAddress&) { return *key_; };
    return o;
  }

  loadgen::EngineConfig engine(double rate, int64_t duration_ns) const {
    loadgen::EngineConfig e;
    e.host = "127.0.0.1";
    e.port = echo_.port();
    e.connections = 2;
    e.max_outstanding = 4;
    e.schedule.kind = loadgen::ScheduleKind::kFixed;
    e.schedule.rate_per_s = rate;
    e.duration_ns = duration_ns;
    return e;
  }

  // Waits (bounded) until the echo server's count stays put for 300 ms;
  // returns whether it did within `limit`.
  bool load_stops(std::chrono::milliseconds limit) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    uint64_t before = echo_.frames();
    while (std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(300ms);
      const uint64_t now = echo_.frames();
      if (now == before) return true;
      before = now;
    }
    return false;
  }

  testing::ScratchDir dir_;
  std::string key_path_;
  std::optional<common::Key> key_;
  tier::EchoServer echo_;
};

// Started as root the agent refuses to run unless --allow-root says so
// (the fixture's agents drop to nobody instead).
TEST(LoaddRoot, RootIsRefusedWithOneLineUnlessAllowed) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root";
  const auto refused = common::run_command({NABLA_LOADD_PATH, "--listen", "127.0.0.1:0"});
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_EQ(refused.stderr_text,
            "nabla-loadd needs no privilege: run it as an unprivileged user (the package's unit "
            "runs it as nabla-load), or pass --allow-root");  // one line (run_command trims)
  EXPECT_EQ(refused.stdout_text, "");
  const auto allowed = common::run_command({NABLA_LOADD_PATH, "--allow-root", "--check"});
  EXPECT_EQ(allowed.exit_code, 0) << allowed.stderr_text;
  EXPECT_NE(allowed.stdout_text.find("ok: listen"), std::string::npos) << allowed.stdout_text;
}

// Root by hand with --allow-root: no capability in any thread, from the
// start (control and lease threads) through a round (its load threads),
// and the round still runs.
TEST_F(LoaddAgents, AnAgentStartedAsRootDropsEveryCapabilityAndServesARound) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root";
  LoaddProcess agent(key_path_, {"--allow-root"}, /*as_root=*/true);
  ASSERT_NE(agent.port(), 0);
  // It says it listens just before it starts its control and lease threads.
  for (int i = 0; i < 100 && thread_statuses(agent.pid()).size() < 3; ++i) {
    std::this_thread::sleep_for(20ms);
  }
  EXPECT_GE(expect_root_without_capabilities(agent.pid()), 3u);  // main, control, leases

  AgentPool pool({agent.address()}, pool_options());
  loadgen::RoundRequest request;
  request.engine = engine(1000, 300'000'000);  // 300 sends
  request.duration_ns = 300'000'000;
  request.lead_ns = 100'000'000;
  auto round = std::async(std::launch::async, [&] { return pool.runner()(request); });
  // Mid-round: the round's threads hold nothing either.
  std::size_t most_threads = 0;
  while (round.wait_for(50ms) != std::future_status::ready) {
    most_threads = std::max(most_threads, expect_root_without_capabilities(agent.pid()));
  }
  const loadgen::RoundOutcome outcome = round.get();
  ASSERT_EQ(outcome.agents.size(), 1u);
  EXPECT_NEAR(static_cast<double>(outcome.merged.scheduled), 300, 2);
  EXPECT_EQ(outcome.merged.completed, outcome.merged.sent);
  EXPECT_EQ(echo_.frames(), outcome.merged.sent);
  EXPECT_GT(most_threads, 3u) << "no round thread was seen";
}

TEST_F(LoaddAgents, ARoundOnTwoAgentsReturnsTheRequestedCounts) {
  LoaddProcess a(key_path_), b(key_path_);
  ASSERT_NE(a.port(), 0);
  ASSERT_NE(b.port(), 0);
  if (::geteuid() == 0) {
    EXPECT_EQ(uid_of(a.pid()), static_cast<long>(kNobody));
  }

  AgentPool pool({a.address(), b.address()}, pool_options());
  loadgen::RoundRequest request;
  request.engine = engine(2000, 500'000'000);  // 1000 sends, 500 per agent
  request.duration_ns = 500'000'000;
  request.lead_ns = 100'000'000;
  const int64_t asked_at = common::monotonic_ns();
  const loadgen::RoundOutcome outcome = pool.runner()(request);

  ASSERT_EQ(outcome.agents.size(), 2u);
  EXPECT_EQ(outcome.agents[0].agent, a.address().name());
  EXPECT_EQ(outcome.agents[1].agent, b.address().name());
  uint64_t sent = 0;
  for (const auto& agent : outcome.agents) {
    EXPECT_NEAR(agent.rate_per_s, 1000, 1e-9);
    EXPECT_NEAR(static_cast<double>(agent.scheduled), 500, 2) << agent.agent;
    EXPECT_EQ(agent.completed, agent.sent) << agent.agent;
    EXPECT_EQ(agent.samples, agent.completed) << agent.agent;
    sent += agent.sent;
  }
  EXPECT_EQ(outcome.merged.sent, sent);
  EXPECT_EQ(outcome.merged.completed, sent);
  EXPECT_EQ(outcome.merged.samples.size(), sent);
  EXPECT_EQ(echo_.frames(), sent);
  // On the controller's clock, from the round's start, in order.
  EXPECT_GE(outcome.start_ns, asked_at + request.lead_ns);
  ASSERT_FALSE(outcome.merged.samples.empty());
  EXPECT_GE(outcome.merged.samples.front().intended_ns, outcome.start_ns);
  EXPECT_LT(outcome.merged.samples.back().intended_ns, outcome.start_ns + 600'000'000);
  for (std::size_t i = 1; i < outcome.merged.samples.size(); ++i) {
    ASSERT_LE(outcome.merged.samples[i - 1].intended_ns, outcome.merged.samples[i].intended_ns);
  }
  // The next round runs at once on the same agents.
  const uint64_t frames_before = echo_.frames();
  const loadgen::RoundOutcome again = pool.runner()(request);
  ASSERT_EQ(again.agents.size(), 2u);
  EXPECT_NEAR(static_cast<double>(again.merged.scheduled), 1000, 4);
  EXPECT_EQ(again.merged.completed, again.merged.sent);
  EXPECT_EQ(echo_.frames() - frames_before, again.merged.sent);
  EXPECT_GT(again.start_ns, outcome.start_ns);
  // Both agents are free again.
  for (const auto* agent : {&a, &b}) {
    const auto info = protocol::LoaddInfo::from_json(
        client(agent->port()).call("daemon.info", json::object(), 3s));
    EXPECT_FALSE(info.busy);
    EXPECT_EQ(info.round, "");
  }
}

TEST_F(LoaddAgents, ARoundNobodyPollsLapsesAndItsLoadStops) {
  LoaddProcess a(key_path_);
  ASSERT_NE(a.port(), 0);
  auto c = client(a.port());
  protocol::LoadStartParams start;
  start.owner = "forgetful";
  start.lease_s = 1;
  start.engine = loadgen::engine_config_to_json(engine(500, 30'000'000'000));
  const auto started = c.call(start, 3s);
  const auto started_at = std::chrono::steady_clock::now();
  // Running at first (bounded: 800 ms, within the lease)...
  for (int i = 0; i < 80 && echo_.frames() < 50; ++i) std::this_thread::sleep_for(10ms);
  EXPECT_GT(echo_.frames(), 0u);
  // ...lapsed ~100 ms after its lease (1 s) without a poll. The status of a
  // lapsed round reads lapsed (the poll keeps it readable, the load stays
  // stopped).
  std::this_thread::sleep_until(started_at + 1400ms);
  const auto status = c.call(protocol::LoadStatusParams{{started.id, "forgetful"}}, 3s);
  EXPECT_TRUE(load_stops(3s)) << "the load went on after the lease";
  EXPECT_LT(echo_.frames(), 1500u);  // far less than 30 s at 500 rps
  EXPECT_EQ(status.state, protocol::RoundState::kLapsed);
}

TEST_F(LoaddAgents, BadRequestsGetOneClearErrorAndTheAgentServesOn) {
  LoaddProcess a(key_path_, {"--allow-target", "10.0.0.0/8"});
  ASSERT_NE(a.port(), 0);
  auto c = client(a.port());
  const auto expect_error = [&](const std::string& method, const json& params, int code,
                                const std::string& part) {
    try {
      c.call(method, params, 3s);
      FAIL() << method << " " << params.dump() << " succeeded";
    } catch (const common::RpcError& e) {
      EXPECT_EQ(e.code(), code) << e.what();
      EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
    }
  };
  json start = protocol::LoadStartParams{"me", 5, 0, loadgen::AgentKind::kSymmetric,
                                         loadgen::engine_config_to_json(engine(100, 100'000'000))}
                   .to_json();
  // The target is outside --allow-target.
  expect_error("load.start", start, common::rpc_code::kInvalidParams,
               "outside this agent's --allow-target");
  auto bad = start;
  bad["engine"]["conections"] = 3;
  expect_error("load.start", bad, common::rpc_code::kInvalidParams, "engine.conections");
  bad = start;
  bad["owner"] = 7;
  expect_error("load.start", bad, common::rpc_code::kInvalidParams, "owner: must be a string");
  expect_error("load.status", {{"id", "r1"}, {"owner", "me"}}, common::rpc_code::kConflict,
               "no round r1");
  expect_error("load.samples", {{"id", "r1"}, {"owner", "me"}, {"limit", 9000}},
               common::rpc_code::kInvalidParams, "limit:");
  expect_error("load.nothing", json::object(), common::rpc_code::kMethodNotFound, "");

  // A wrong key is refused at the handshake; a client without one too,
  // and one that means another daemon kind. Each says why in one line.
  const auto refusal = [&](std::optional<common::Key> key, const char* kind) {
    try {
      common::RpcClient::connect("127.0.0.1", a.port(), std::move(key), 3s, kind);
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
    return std::string("connected");
  };
  const std::string wrong =
      refusal(common::Key(std::vector<uint8_t>(32, 7)), common::kLoaddKeyName);
  EXPECT_NE(wrong.find("authentication failed"), std::string::npos) << wrong;
  const std::string none = refusal(std::nullopt, common::kLoaddKeyName);
  EXPECT_NE(none.find("key"), std::string::npos) << none;
  const std::string other = refusal(*key_, "injectd");
  EXPECT_NE(other.find("loadd"), std::string::npos) << other;
  // A request before authenticating gets -32002, not an answer.
  const json early = raw_request_before_auth(a.port());
  EXPECT_EQ(early.value("/error/code"_json_pointer, 0), common::rpc_code::kNotAuthenticated)
      << early.dump();

  // Still serving, on the same connection and on a new one.
  const auto info = protocol::LoaddInfo::from_json(c.call("daemon.info", json::object(), 3s));
  EXPECT_EQ(info.name, "nabla-loadd");
  EXPECT_EQ(info.allow_target, std::vector<std::string>{"10.0.0.0/8"});
  EXPECT_FALSE(info.busy);
  EXPECT_NO_THROW(client(a.port()).call("daemon.info", json::object(), 3s));
}

TEST_F(LoaddAgents, AnAgentKilledMidRoundFailsTheRoundNamingIt) {
  LoaddProcess a(key_path_), b(key_path_);
  ASSERT_NE(a.port(), 0);
  ASSERT_NE(b.port(), 0);
  const std::string b_name = b.address().name();
  AgentPool pool({a.address(), b.address()}, pool_options());
  loadgen::RoundRequest request;
  request.engine = engine(1000, 20'000'000'000);
  request.duration_ns = 20'000'000'000;
  request.lead_ns = 50'000'000;
  auto round = std::async(std::launch::async, [&] { return pool.runner()(request); });
  // Bounded: until both agents load (the echo server sees frames), 5 s at most.
  for (int i = 0; i < 50 && echo_.frames() < 200; ++i) std::this_thread::sleep_for(100ms);
  ASSERT_GE(echo_.frames(), 200u);
  b.kill(SIGKILL);
  ASSERT_EQ(round.wait_for(10s), std::future_status::ready) << "the runner did not notice";
  try {
    round.get();
    FAIL() << "the round succeeded without an agent";
  } catch (const loadgen::AgentFailure& e) {
    EXPECT_EQ(e.agent(), b_name) << e.what();
  }
  // Nothing runs any more: agent a was stopped, the load ends.
  EXPECT_TRUE(load_stops(3s));
  const auto info =
      protocol::LoaddInfo::from_json(client(a.port()).call("daemon.info", json::object(), 3s));
  EXPECT_FALSE(info.busy);
}

}  // namespace
}  // namespace nabla::loadd
