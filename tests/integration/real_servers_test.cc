// `nabla load` against real memcached and redis-server processes that this
// test starts on 127.0.0.1 (free ports, no persistence) and stops by pid,
// also on failure. What nabla counts must equal what the server counted
// (memcached `stats`, redis INFO commandstats), request for request; error
// replies are server errors, never latency samples; a server killed mid-run
// fails the run, which is stored as failed. Every run is bounded by
// --max-duration and a rate of at most 2000 rps. No root needed.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "loopback.hh"
#include "nabla/common/netns.hh"
#include "nabla_test_support.hh"
#include "scratch_dir.hh"

namespace nabla::testing {
namespace {

namespace fs = std::filesystem;
using common::ChildProcess;
using nabla::testing::ScratchDir;
using nlohmann::json;

// ---------------------------------------------------------------- sockets

// A connected TCP socket to 127.0.0.1:port with 5 s send/receive timeouts,
// or -1.
int connect_loopback(uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  timeval five{5, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &five, sizeof five);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &five, sizeof five);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(port);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// Sends `request` and reads until `complete(reply)` holds; "" when the
// server closed, failed or took longer than 5 s.
std::string exchange(uint16_t port, const std::string& request,
                     const std::function<bool(const std::string&)>& complete) {
  const int fd = connect_loopback(port);
  if (fd < 0) return {};
  std::string reply;
  if (::send(fd, request.data(), request.size(), MSG_NOSIGNAL) ==
      static_cast<ssize_t>(request.size())) {
    char buf[4096];
    while (!complete(reply)) {
      const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
      if (n <= 0) {
        reply.clear();
        break;
      }
      reply.append(buf, static_cast<size_t>(n));
    }
  }
  ::close(fd);
  return reply;
}

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// ---------------------------------------------------------------- servers

// A server process on 127.0.0.1: started on a free port (another one if the
// port was taken in between), up once it accepts a connection (5 s at
// most), stopped by pid when destroyed (SIGTERM, then SIGKILL).
class Server {
 public:
  using Argv = std::function<std::vector<std::string>(uint16_t port)>;

  Server(const std::string& name, const Argv& argv) {
    log_ = (fs::temp_directory_path() /
            ("nabla-real-" + name + "-" + std::to_string(::getpid()) + ".log"))
               .string();
    for (int attempt = 0; attempt < 3 && !up(); ++attempt) {
      port_ = free_loopback_port();
      child_ = std::make_unique<ChildProcess>(argv(port_), nullptr, log_);
      wait_until_accepting();
    }
  }
  ~Server() {
    child_.reset();
    std::error_code ignored;
    fs::remove(log_, ignored);
  }
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  bool up() const { return up_; }
  uint16_t port() const { return port_; }
  // The server's own output, for failure messages.
  std::string log() const {
    std::ifstream in(log_);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  // SIGKILL by pid, reaped: the server dies without a goodbye.
  void kill() {
    child_->signal(SIGKILL);
    child_->wait(std::chrono::seconds(5));
  }

 private:
  void wait_until_accepting() {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (child_->running() && std::chrono::steady_clock::now() < deadline) {
      const int fd = connect_loopback(port_);
      if (fd >= 0) {
        ::close(fd);
        up_ = true;
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }

  std::string log_;
  std::unique_ptr<ChildProcess> child_;
  uint16_t port_ = 0;
  bool up_ = false;
};

// memcached, plus `extra` flags (e.g. an item size limit).
std::unique_ptr<Server> start_memcached(const std::vector<std::string>& extra = {}) {
  const std::string program = program_on_path("memcached");
  return std::make_unique<Server>("memcached", [&](uint16_t port) {
    std::vector<std::string> argv{program, "-l", "127.0.0.1", "-p", std::to_string(port),
                                  "-U",    "0"};
    if (::geteuid() == 0) argv.insert(argv.end(), {"-u", "nobody"});  // it refuses to run as root
    argv.insert(argv.end(), extra.begin(), extra.end());
    return argv;
  });
}

// redis-server without persistence, plus `extra` flags (e.g. maxmemory).
std::unique_ptr<Server> start_redis(const std::vector<std::string>& extra = {}) {
  const std::string program = program_on_path("redis-server");
  const std::string dir = fs::temp_directory_path().string();
  return std::make_unique<Server>("redis", [&](uint16_t port) {
    std::vector<std::string> argv{program,  "--port", std::to_string(port), "--bind", "127.0.0.1",
                                  "--save", "",       "--appendonly",       "no",     "--dir",
                                  dir};
    argv.insert(argv.end(), extra.begin(), extra.end());
    return argv;
  });
}

// ------------------------------------------------------- server counters

// Requests of one type as the server counted them: every one it received,
// and those it answered with an error.
struct Seen {
  uint64_t requests = 0;
  uint64_t errors = 0;
};

// memcached `stats`, name -> value (numeric ones only).
std::map<std::string, uint64_t> memcached_stats(uint16_t port) {
  const std::string reply =
      exchange(port, "stats\r\n", [](const std::string& r) { return ends_with(r, "END\r\n"); });
  std::map<std::string, uint64_t> stats;
  std::istringstream lines(reply);
  std::string stat, name, value;
  while (lines >> stat >> name >> value) {
    if (stat != "STAT") continue;
    try {
      stats[name] = std::stoull(value);
    } catch (const std::exception&) {
    }
  }
  return stats;
}

// What memcached saw between two `stats`: a too-large SET is answered
// SERVER_ERROR and counted in store_too_large, not in cmd_set.
std::map<std::string, Seen> memcached_seen(std::map<std::string, uint64_t> before,
                                           std::map<std::string, uint64_t> after) {
  auto diff = [&](const char* name) { return after[name] - before[name]; };
  return {{"get", {diff("cmd_get"), 0}},
          {"set", {diff("cmd_set") + diff("store_too_large"), diff("store_too_large")}}};
}

// A RESP reply that is complete: one line, or a bulk string and its CRLF.
bool resp_complete(const std::string& r) {
  const auto eol = r.find("\r\n");
  if (eol == std::string::npos) return false;
  if (r[0] != '$') return true;
  const long n = std::stol(r.substr(1, eol - 1));
  return n < 0 || r.size() >= eol + 2 + static_cast<size_t>(n) + 2;
}

// redis INFO commandstats, per command: a rejected call (e.g. OOM) is not
// in `calls`; a failed call is.
std::map<std::string, Seen> redis_seen(uint16_t port) {
  const std::string reply = exchange(port, "INFO commandstats\r\n", resp_complete);
  std::map<std::string, Seen> seen;
  std::istringstream lines(reply);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind("cmdstat_", 0) != 0) continue;
    const std::string command = line.substr(8, line.find(':') - 8);
    auto field = [&](const std::string& key) -> uint64_t {
      const auto at = line.find(key + "=");
      return at == std::string::npos ? 0 : std::stoull(line.substr(at + key.size() + 1));
    };
    seen[command] = {field("calls") + field("rejected_calls"),
                     field("rejected_calls") + field("failed_calls")};
  }
  return seen;
}

bool redis_reset_stats(uint16_t port) {
  return exchange(port, "CONFIG RESETSTAT\r\n", resp_complete) == "+OK\r\n";
}

// ------------------------------------------------------------ nabla load

// `nabla load --json` against `target` with the get/set mix and zipf keys,
// pipelined (one connection, up to 8 outstanding); `extra` adds flags.
// Runs `argv` (a `nabla load --json`), expects exit 0, returns its JSON.
json load_json(const std::vector<std::string>& argv, std::chrono::seconds limit) {
  const auto r = common::run_command(argv, nullptr, limit);
  EXPECT_EQ(r.exit_code, 0) << r.stderr_text;
  try {
    return json::parse(r.stdout_text);
  } catch (const json::exception& e) {
    ADD_FAILURE() << "not JSON (" << e.what() << "): " << r.stdout_text << r.stderr_text;
    return json::object();
  }
}

json run_load(const std::string& target, const std::vector<std::string>& extra) {
  std::vector<std::string> argv{
      NABLA_PATH,       "load", "--target",         target, "--mix",         "get=0.9,set=0.1",
      "--key-dist",     "zipf", "--connections",    "1",    "--outstanding", "8",
      "--max-duration", "2s",   "--late-threshold", "1ms",  "--json"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  return load_json(argv, std::chrono::seconds(30));
}

// The requests_by_type entry of `type`.
json counted(const json& j, const std::string& type) {
  for (const auto& t : j.value("requests_by_type", json::array())) {
    if (t["type"] == type) return t;
  }
  ADD_FAILURE() << "no requests_by_type entry for " << type << ": " << j.dump();
  return {{"completed", 0}, {"server_errors", 0}};
}

// nabla's counts equal the server's, type by type, exactly; every request
// sent was answered (completed or a server error), no other error.
void expect_same_counts(const json& j, const std::map<std::string, Seen>& server) {
  uint64_t answered = 0;
  for (const char* type : {"get", "set"}) {
    const json c = counted(j, type);
    const auto completed = c["completed"].get<uint64_t>();
    const auto errors = c["server_errors"].get<uint64_t>();
    const Seen s = server.count(type) ? server.at(type) : Seen{};
    EXPECT_EQ(completed + errors, s.requests) << type << " requests";
    EXPECT_EQ(errors, s.errors) << type << " error replies";
    answered += completed + errors;
  }
  EXPECT_EQ(j["sent"].get<uint64_t>(), answered);
  for (const auto& [kind, n] : j["errors"].items()) {
    if (kind != "server") {
      EXPECT_EQ(n, 0) << kind;
    }
  }
}

// The kept samples of `type` (per_type lists every type when there are two).
uint64_t samples_of(const json& j, const std::string& type) {
  for (const auto& t : j["per_type"]) {
    if (t["type"] == type) return t["samples"].get<uint64_t>();
  }
  return 0;
}

// Values from 1 byte to 100 KB, one bounded run per size (--value-size is
// one size per run); the big values at a lower rate.
struct SizeRun {
  int value_bytes;
  int rate;
};
const std::vector<SizeRun> kSizes = {{1, 2000}, {1000, 2000}, {100'000, 500}};

std::vector<std::string> size_flags(const SizeRun& s) {
  return {"--rate", std::to_string(s.rate), "--value-size", std::to_string(s.value_bytes)};
}

// ------------------------------------------------------------------ tests

TEST(RealServers, MemcachedCountsEqualTheServersAtEveryValueSize) {
  NABLA_REQUIRE_PROGRAM_OR_SKIP("memcached");
  auto server = start_memcached();
  ASSERT_TRUE(server->up()) << "memcached did not accept connections: " << server->log();
  const std::string target = "memcache://127.0.0.1:" + std::to_string(server->port());
  for (const SizeRun& size : kSizes) {
    SCOPED_TRACE("value bytes " + std::to_string(size.value_bytes));
    auto before = memcached_stats(server->port());
    const json j = run_load(target, size_flags(size));
    auto after = memcached_stats(server->port());
    ASSERT_TRUE(after.count("cmd_get")) << "no stats from memcached";
    EXPECT_EQ(after["get_hits"] + after["get_misses"], after["cmd_get"]);
    expect_same_counts(j, memcached_seen(before, after));
    EXPECT_EQ(j["errors"]["server"], 0);
    // Stored values were read back: VALUE replies of this size were framed.
    EXPECT_GT(after["get_hits"] - before["get_hits"], 0u);
    EXPECT_GT(j["samples"].get<uint64_t>(), 0u);
  }
}

TEST(RealServers, RedisCountsEqualTheServersAtEveryValueSize) {
  NABLA_REQUIRE_PROGRAM_OR_SKIP("redis-server");
  auto server = start_redis();
  ASSERT_TRUE(server->up()) << "redis-server did not accept connections: " << server->log();
  const std::string target = "redis://127.0.0.1:" + std::to_string(server->port());
  for (const SizeRun& size : kSizes) {
    SCOPED_TRACE("value bytes " + std::to_string(size.value_bytes));
    ASSERT_TRUE(redis_reset_stats(server->port()));
    const json j = run_load(target, size_flags(size));
    expect_same_counts(j, redis_seen(server->port()));
    EXPECT_EQ(j["errors"]["server"], 0);
    EXPECT_GT(counted(j, "get")["completed"].get<uint64_t>(), 0u);
    EXPECT_GT(j["samples"].get<uint64_t>(), 0u);
  }
}

// An error reply is a server error: counted as one, and neither a sample nor
// a completed request. Here SETs are refused and every GET is answered.
void expect_sets_refused(const json& j) {
  const json set = counted(j, "set");
  EXPECT_GT(set["server_errors"].get<uint64_t>(), 0u);
  EXPECT_EQ(j["errors"]["server"], set["server_errors"]);
  EXPECT_LE(samples_of(j, "set"), set["completed"].get<uint64_t>());
  EXPECT_GT(samples_of(j, "get"), 0u);
  // More than 1% of the requests failed: no verdict on the survivors.
  EXPECT_EQ(j["verdict"], "n/a");
  EXPECT_NE(j["reasons"].dump().find("server "), std::string::npos) << j["reasons"].dump();
}

// The README's flags (4 connections, 1 thread, p99; the time budget bounded
// for the suite), run as a newcomer would. What must hold on any machine,
// whatever the verdict: the three timings are ordered sample by sample
// (sojourn >= response >= in flight, the last up to the kernel TX stamp's
// mapping from CLOCK_REALTIME, measured once per thread),
// the client's own lateness is never a reason for n/a, the load threads
// asked for their scheduler slice, and nabla's counts equal the server's.
void expect_readme_run_is_consistent(const json& j, const std::map<std::string, Seen>& server) {
  auto p = [](const json& ps, double which) {
    for (const auto& x : ps) {
      if (x["p"] == which) return x["value_ns"].get<double>();
    }
    ADD_FAILURE() << "no p" << which << " in " << ps.dump();
    return 0.0;
  };
  for (double which : {50.0, 99.0}) {
    EXPECT_GE(p(j["sojourn_percentiles"], which), p(j["percentiles"], which)) << which;
    EXPECT_GE(p(j["percentiles"], which) + 100'000, p(j["in_flight_percentiles"], which)) << which;
  }
  for (const auto& reason : j["reasons"]) {
    EXPECT_EQ(reason.get<std::string>().find("send lateness at"), std::string::npos) << reason;
  }
  if (j["verdict"] == "ok") {
    EXPECT_TRUE(j["reasons"].empty());
    ASSERT_FALSE(j["percentiles"][0]["ci_low_ns"].is_null());
    EXPECT_LE(j["percentiles"][0]["ci_low_ns"].get<double>(), p(j["percentiles"], 99));
  }
  EXPECT_EQ(j["send_timer"]["slice_ns"], 100'000);
  EXPECT_EQ(j["send_timer"]["slice_granted"].get<bool>(),
            j["send_timer"]["slice_note"].get<std::string>().empty());
  expect_same_counts(j, server);
  EXPECT_EQ(j["errors"]["server"], 0);
}

json run_readme_load(const std::string& target) {
  return load_json({NABLA_PATH, "load", "--target", target, "--rate", "2000", "--connections", "4",
                    "--threads", "1", "--percentile", "99", "--max-duration", "10s", "--json"},
                   std::chrono::seconds(60));
}

TEST(RealServers, MemcachedWithTheReadmesFlagsAnswersConsistently) {
  NABLA_REQUIRE_PROGRAM_OR_SKIP("memcached");
  auto server = start_memcached();
  ASSERT_TRUE(server->up()) << "memcached did not accept connections: " << server->log();
  const auto before = memcached_stats(server->port());
  const json j = run_readme_load("memcache://127.0.0.1:" + std::to_string(server->port()));
  ASSERT_TRUE(j.contains("verdict")) << j.dump();
  expect_readme_run_is_consistent(j, memcached_seen(before, memcached_stats(server->port())));
}

TEST(RealServers, RedisWithTheReadmesFlagsAnswersConsistently) {
  NABLA_REQUIRE_PROGRAM_OR_SKIP("redis-server");
  auto server = start_redis();
  ASSERT_TRUE(server->up()) << "redis-server did not accept connections: " << server->log();
  ASSERT_TRUE(redis_reset_stats(server->port()));
  const json j = run_readme_load("redis://127.0.0.1:" + std::to_string(server->port()));
  ASSERT_TRUE(j.contains("verdict")) << j.dump();
  expect_readme_run_is_consistent(j, redis_seen(server->port()));
}

TEST(RealServers, MemcachedObjectTooLargeIsAServerErrorNotASample) {
  NABLA_REQUIRE_PROGRAM_OR_SKIP("memcached");
  // The smallest item size memcached accepts (1 KiB; its slab chunks must
  // not exceed it): a 2000-byte SET is answered "SERVER_ERROR object too
  // large for cache".
  auto server = start_memcached({"-I", "1k", "-o", "slab_chunk_max=512"});
  ASSERT_TRUE(server->up()) << "memcached did not accept connections: " << server->log();
  const auto before = memcached_stats(server->port());
  const json j = run_load("memcache://127.0.0.1:" + std::to_string(server->port()),
                          {"--rate", "1000", "--value-size", "2000"});
  const auto after = memcached_stats(server->port());
  expect_same_counts(j, memcached_seen(before, after));
  expect_sets_refused(j);
  EXPECT_EQ(counted(j, "set")["completed"], 0);  // no SET fits
}

TEST(RealServers, RedisOomIsAServerErrorNotASample) {
  NABLA_REQUIRE_PROGRAM_OR_SKIP("redis-server");
  // An empty redis uses about 1 MB already: (nearly) every 100 KB SET is
  // answered "-OOM command not allowed when used memory > 'maxmemory'".
  auto server = start_redis({"--maxmemory", "1mb", "--maxmemory-policy", "noeviction"});
  ASSERT_TRUE(server->up()) << "redis-server did not accept connections: " << server->log();
  ASSERT_TRUE(redis_reset_stats(server->port()));
  const json j = run_load("redis://127.0.0.1:" + std::to_string(server->port()),
                          {"--rate", "1000", "--value-size", "100000"});
  expect_same_counts(j, redis_seen(server->port()));
  expect_sets_refused(j);
}

// Requests the server has seen so far.
using SeenSoFar = std::function<uint64_t()>;

// Starts a stored `nabla load` against `target`, kills the server by pid
// once it has seen 300 requests, and checks that the run
// fails naming the lost target and is stored as failed, not complete.
void expect_failed_run_when_killed(Server& server, const std::string& target,
                                   const SeenSoFar& seen) {
  const ScratchDir dir("nabla-real-kill-" + target.substr(0, target.find(':')));
  const std::string db = dir.file("load.db");
  const std::string out = dir.file("load.out");
  ChildProcess load({NABLA_PATH, "load", "--target", target, "--rate", "1000", "--mix",
                     "get=0.9,set=0.1", "--outstanding", "4", "--max-duration", "3s",
                     "--late-threshold", "1ms", "--db", db, "--json"},
                    nullptr, out);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (seen() < 300 && load.running() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_TRUE(load.running()) << "nabla load ended before the server was killed";
  ASSERT_GE(seen(), 300u) << "the server saw too few requests";
  server.kill();
  const int code = load.wait(std::chrono::seconds(30));
  std::ifstream in(out);
  const std::string text((std::istreambuf_iterator<char>(in)), {});
  EXPECT_EQ(code, 1) << text;
  const std::string lost = "lost the target 127.0.0.1:" + std::to_string(server.port());
  EXPECT_NE(text.find(lost), std::string::npos) << text;
  const auto runs = common::run_command({NABLA_PATH, "runs", "--db", db, "list", "--json"});
  ASSERT_EQ(runs.exit_code, 0) << runs.stderr_text;
  const json list = json::parse(runs.stdout_text);
  ASSERT_EQ(list.size(), 1u) << list.dump();
  EXPECT_EQ(list[0]["status"], "failed");
  EXPECT_NE(list[0]["error"].dump().find(lost), std::string::npos) << list[0].dump();
}

TEST(RealServers, MemcachedKilledMidRunFailsTheStoredRun) {
  NABLA_REQUIRE_PROGRAM_OR_SKIP("memcached");
  auto server = start_memcached();
  ASSERT_TRUE(server->up()) << "memcached did not accept connections: " << server->log();
  const uint16_t port = server->port();
  expect_failed_run_when_killed(*server, "memcache://127.0.0.1:" + std::to_string(port), [port] {
    auto stats = memcached_stats(port);
    return stats["cmd_get"] + stats["cmd_set"];
  });
}

TEST(RealServers, RedisKilledMidRunFailsTheStoredRun) {
  NABLA_REQUIRE_PROGRAM_OR_SKIP("redis-server");
  auto server = start_redis();
  ASSERT_TRUE(server->up()) << "redis-server did not accept connections: " << server->log();
  const uint16_t port = server->port();
  expect_failed_run_when_killed(*server, "redis://127.0.0.1:" + std::to_string(port), [port] {
    auto seen = redis_seen(port);
    return seen["get"].requests + seen["set"].requests;
  });
}

// memcached over its connection limit answers a new connection with
// "ERROR Too many open connections" and closes it: a refused connection
// (a connect error), not an unframeable reply. Refused to the end, the run
// fails.
TEST(RealServers, MemcachedOverItsConnectionLimitRefusesConnections) {
  NABLA_REQUIRE_PROGRAM_OR_SKIP("memcached");
  // 20 is about the fewest it starts with (its own descriptors count too).
  auto server = start_memcached({"-c", "20", "-t", "1"});
  ASSERT_TRUE(server->up()) << "memcached did not accept connections: " << server->log();
  const auto r = common::run_command(
      {NABLA_PATH, "load", "--target", "memcache://127.0.0.1:" + std::to_string(server->port()),
       "--rate", "500", "--connections", "40", "--max-duration", "1s", "--late-threshold", "1ms",
       "--json"},
      nullptr, std::chrono::seconds(30));
  EXPECT_EQ(r.exit_code, 1) << r.stdout_text << r.stderr_text;
  EXPECT_NE(r.stderr_text.find("could not connect ("), std::string::npos) << r.stderr_text;
  EXPECT_NE(r.stderr_text.find("refuses connections"), std::string::npos) << r.stderr_text;
}

}  // namespace
}  // namespace nabla::testing
