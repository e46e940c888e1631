// `nabla load --agent` end to end: three load agents (nabla-loadd, each as
// nobody on its own testbed host), a real memcached and a real nginx on a
// server host, and the coordinator on a fifth host; namespaces, servers and
// agents removed on exit, even on failure.
//   - memcached, one agent of each kind: every request an agent sent reached
//     memcached (its own counters, exactly), the agents' shares add up to the
//     target rate, the throughput agent returns no latency, and the stored
//     run's load_agents rows say the same as the output;
//   - nginx, two symmetric agents: every request sent is one access-log line;
//   - an agent killed (SIGKILL) mid-run: `nabla load` exits 1 naming it, the
//     run is stored failed with that reason and what was measured, and the
//     other agents stop loading (memcached's counters stand still) while
//     they keep serving.
// Speed and accuracy against one agent are in bench/loadgen/agents.sh.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "nabla/common/fd.hh"
#include "nabla/common/netns.hh"
#include "nabla/common/rpc_auth.hh"
#include "nabla/common/text_file.hh"
#include "nabla/testbed/testbed.hh"
#include "nabla_test_support.hh"
#include "scratch_dir.hh"
#include "tier_probe.hh"

namespace {

using nabla::common::ChildProcess;
using nabla::testbed::Testbed;
using nabla::testbed::TestbedSpec;
using nlohmann::json;
using namespace std::chrono_literals;

constexpr uid_t kNobody = 65534;

// Sends `request` on a fresh connection inside the server's namespace and
// reads until `done` says the reply is complete (3 s at most).
std::string exchange_in(const nabla::common::NetNamespace& ns, const std::string& ip, uint16_t port,
                        const std::string& request, bool (*done)(const std::string&)) {
  const auto fd = nabla::testing::connect_in(ns, ip, port);
  if (!fd.valid()) return {};
  if (::send(fd.get(), request.data(), request.size(), MSG_NOSIGNAL) < 0) return {};
  std::string reply;
  const auto deadline = std::chrono::steady_clock::now() + 3s;
  timeval tv{0, 100'000};
  ::setsockopt(fd.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  while (!done(reply) && std::chrono::steady_clock::now() < deadline) {
    char buf[4096];
    const ssize_t n = ::recv(fd.get(), buf, sizeof buf, 0);
    if (n == 0) break;
    if (n > 0) reply.append(buf, static_cast<size_t>(n));
  }
  return reply;
}

bool ends_with_end(const std::string& r) {
  return r.size() >= 5 && r.compare(r.size() - 5, 5, "END\r\n") == 0;
}

// GETs and SETs memcached has been asked for so far.
uint64_t memcached_commands(const nabla::common::NetNamespace& ns, const std::string& ip) {
  std::istringstream lines(exchange_in(ns, ip, 11211, "stats\r\n", ends_with_end));
  std::string stat, name, value;
  uint64_t n = 0;
  while (lines >> stat >> name >> value) {
    if (stat == "STAT" && (name == "cmd_get" || name == "cmd_set")) n += std::stoull(value);
  }
  return n;
}

std::size_t count_lines(const std::string& path) {
  std::ifstream in(path);
  std::size_t n = 0;
  std::string line;
  while (std::getline(in, line)) ++n;
  return n;
}

struct Output {
  int exit_code = -1;
  std::string text;
  json point;  // the --json document, when there is one
};

// Runs `nabla ARGS...` on the coordinator host, output to `path`.
Output run_nabla(const nabla::common::NetNamespace& ns, std::vector<std::string> args,
                 const std::string& path, std::chrono::seconds timeout) {
  args.insert(args.begin(), NABLA_PATH);
  Output out;
  {
    ChildProcess nabla(args, &ns, path);
    out.exit_code = nabla.wait(timeout);
    if (out.exit_code == -1) nabla.signal(SIGKILL);
  }
  out.text = nabla::common::read_text_file(path);
  if (const auto at = out.text.find("{\n"); at != std::string::npos) {
    out.point = json::parse(out.text.substr(at), nullptr, false);
  }
  return out;
}

class LoadAgents : public ::testing::Test {
 protected:
  void SetUp() override {
    NABLA_REQUIRE_ROOT_OR_SKIP();
    NABLA_REQUIRE_PROGRAM_OR_SKIP("memcached");
    NABLA_REQUIRE_PROGRAM_OR_SKIP("nginx");
    NABLA_REQUIRE_PROGRAM_OR_SKIP("setpriv");
    nabla::common::sweep_stale_namespaces();
    TestbedSpec spec;
    spec.subnet = "10.213.23.0/24";
    for (const char* name : {"coord", "srv", "a1", "a2", "a3"}) spec.hosts.push_back({name, {}});
    tb_ = std::make_unique<Testbed>(spec);
    dir_ = std::make_unique<nabla::testing::ScratchDir>("load-agents");
    key_ = dir_->file("key");
    nabla::common::generate_key_file(key_);
    // The agents run as nobody and read the key; the coordinator is root.
    ASSERT_EQ(::chown(key_.c_str(), kNobody, kNobody), 0);
    const std::string& srv = tb_->host("srv").address;
    tb_->start("srv", {"memcached", "-u", "nobody", "-U", "0", "-l", srv, "-p", "11211"});
    for (const char* a : {"a1", "a2", "a3"}) {
      const std::string& address = tb_->host(a).address;
      agents_[a] = &tb_->start(
          a,
          {"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", NABLA_LOADD_PATH,
           "--listen", address + ":7313", "--key-file", key_, "--log-level", "warn"},
          dir_->file(std::string(a) + ".log"));
    }
    // Everything listens before anything is measured.
    const auto& coord = tb_->host("coord").ns;
    ASSERT_TRUE(nabla::testing::connect_in(coord, srv, 11211).valid());
    for (const char* a : {"a1", "a2", "a3"}) {
      ASSERT_TRUE(nabla::testing::connect_in(coord, tb_->host(a).address, 7313).valid())
          << nabla::common::read_text_file(dir_->file(std::string(a) + ".log"));
    }
  }

  std::string agent(const char* host, const char* kind = nullptr) const {
    return tb_->host(host).address + (kind ? std::string("/") + kind : std::string());
  }

  std::unique_ptr<Testbed> tb_;
  std::unique_ptr<nabla::testing::ScratchDir> dir_;
  std::string key_;
  std::map<std::string, ChildProcess*> agents_;
};

TEST_F(LoadAgents, OneAgentOfEachKindLoadMemcachedAndEveryRequestArrives) {
  const auto& coord = tb_->host("coord").ns;
  const std::string& srv = tb_->host("srv").address;
  const uint64_t before = memcached_commands(coord, srv);
  const std::string db = dir_->file("runs.db");
  const Output out = run_nabla(coord,
                               {"load",
                                "--target",
                                "memcache://" + srv + ":11211",
                                "--rate",
                                "2000",
                                "--connections",
                                "2",
                                "--agent",
                                agent("a1"),
                                "--agent",
                                agent("a2", "throughput"),
                                "--agent",
                                agent("a3", "latency"),
                                "--key-file",
                                key_,
                                "--max-duration",
                                "8s",
                                "--late-threshold",
                                "1ms",
                                "--json",
                                "--db",
                                db},
                               dir_->file("memcached.out"), 60s);
  ASSERT_EQ(out.exit_code, 0) << out.text;
  ASSERT_TRUE(out.point.is_object()) << out.text;
  const json& p = out.point;
  const uint64_t seen = memcached_commands(coord, srv) - before;

  ASSERT_EQ(p["agents"].size(), 3u) << p["agents"].dump();
  uint64_t sent = 0, completed = 0;
  double shares = 0;
  for (const json& a : p["agents"]) {
    sent += a["sent"].get<uint64_t>();
    completed += a["completed"].get<uint64_t>();
    shares += a["share_rps"].get<double>();
    EXPECT_GT(a["sent"].get<uint64_t>(), 0u) << a.dump();
  }
  EXPECT_EQ(p["agents"][0]["kind"], "symmetric");
  EXPECT_EQ(p["agents"][1]["kind"], "throughput");
  EXPECT_EQ(p["agents"][2]["kind"], "latency");
  EXPECT_EQ(p["agents"][1]["samples"], 0u) << "a throughput agent records no latency";
  EXPECT_GT(p["agents"][2]["samples"].get<uint64_t>(), 0u);
  EXPECT_DOUBLE_EQ(p["agents"][2]["share_rps"].get<double>(), 100.0);  // 5% of 2000
  EXPECT_NEAR(shares, 2000.0, 1e-9);
  EXPECT_EQ(sent, p["sent"].get<uint64_t>());
  EXPECT_EQ(completed, p["completed"].get<uint64_t>());
  EXPECT_EQ(p["errors"]["connect"], 0u);
  EXPECT_EQ(p["errors"]["write"], 0u);
  // Every request an agent sent reached memcached, and nothing else did.
  EXPECT_EQ(seen, sent) << "memcached saw " << seen << " commands, the agents sent " << sent;

  const Output show =
      run_nabla(coord, {"runs", "show", "1", "--db", db, "--json"}, dir_->file("show.out"), 30s);
  ASSERT_EQ(show.exit_code, 0) << show.text;
  ASSERT_EQ(show.point["load_agents"].size(), 3u) << show.text;
  for (std::size_t i = 0; i < 3; ++i) {
    const json& stored = show.point["load_agents"][i];
    const json& printed = p["agents"][i];
    EXPECT_EQ(stored["agent"], printed["agent"]);
    EXPECT_EQ(stored["kind"], printed["kind"]);
    EXPECT_EQ(stored["sent"], printed["sent"]);
    EXPECT_EQ(stored["completed"], printed["completed"]);
    EXPECT_EQ(stored["samples"], printed["samples"]);
  }
}

TEST_F(LoadAgents, TwoAgentsLoadNginxAndEveryRequestIsLogged) {
  const auto& coord = tb_->host("coord").ns;
  const std::string& srv = tb_->host("srv").address;
  const std::string conf = dir_->file("nginx.conf");
  const std::string log = dir_->file("access.log");
  {
    std::ofstream f(conf);
    f << "daemon off;\nworker_processes 1;\npid " << dir_->file("nginx.pid") << ";\nerror_log "
      << dir_->file("error.log") << ";\nevents {}\nhttp {\n  access_log " << log
      << ";\n  server {\n    listen " << srv
      << ":8080;\n    location / { return 200 \"ok\\n\"; }\n  }\n}\n";
  }
  ChildProcess& nginx = tb_->start("srv", {"nginx", "-c", conf}, dir_->file("nginx.out"));
  ASSERT_TRUE(nabla::testing::connect_in(coord, srv, 8080).valid());
  const Output out =
      run_nabla(coord,
                {"load", "--target", "http://" + srv + ":8080/", "--rate", "1000", "--connections",
                 "2", "--agent", agent("a1"), "--agent", agent("a3"), "--key-file", key_,
                 "--max-duration", "6s", "--late-threshold", "1ms", "--json"},
                dir_->file("nginx-load.out"), 60s);
  nginx.signal(SIGTERM);  // flushes and closes its log
  nginx.wait(5s);
  ASSERT_EQ(out.exit_code, 0) << out.text;
  const json& p = out.point;
  ASSERT_EQ(p["agents"].size(), 2u) << out.text;
  EXPECT_EQ(p["agents"][0]["share_rps"], 500.0);
  EXPECT_EQ(p["agents"][1]["share_rps"], 500.0);
  EXPECT_EQ(p["errors"]["connect"], 0u);
  EXPECT_EQ(p["errors"]["write"], 0u);
  // Every request sent is one line of nginx's access log (the probe above
  // sent none: it connected and closed).
  EXPECT_EQ(count_lines(log), p["sent"].get<uint64_t>()) << out.text;
}

TEST_F(LoadAgents, AnAgentKilledMidRunFailsTheRunAndStopsTheOthers) {
  const auto& coord = tb_->host("coord").ns;
  const std::string& srv = tb_->host("srv").address;
  const std::string db = dir_->file("killed.db");
  ChildProcess* a2 = agents_["a2"];
  // A run that would go on for 60 s (a CI width it cannot reach); a2 dies 3 s in.
  std::thread killer([a2] {
    std::this_thread::sleep_for(3s);
    a2->signal(SIGKILL);
  });
  const Output out =
      run_nabla(coord,
                {"load", "--target", "memcache://" + srv + ":11211", "--rate", "1000", "--agent",
                 agent("a1"), "--agent", agent("a2"), "--agent", agent("a3", "latency"),
                 "--key-file", key_, "--max-duration", "60s", "--ci-width", "1ns", "--db", db},
                dir_->file("killed.out"), 45s);
  killer.join();
  EXPECT_EQ(out.exit_code, 1) << out.text;
  EXPECT_NE(out.text.find("agent " + tb_->host("a2").address + ":7313"), std::string::npos)
      << out.text;
  // The others stopped: memcached hears nothing more.
  const uint64_t after_run = memcached_commands(coord, srv);
  std::this_thread::sleep_for(1500ms);
  EXPECT_EQ(memcached_commands(coord, srv), after_run) << "an agent still loads memcached";
  // ... and they serve on.
  EXPECT_TRUE(agents_["a1"]->running());
  EXPECT_TRUE(agents_["a3"]->running());
  EXPECT_TRUE(nabla::testing::connect_in(coord, tb_->host("a1").address, 7313).valid());

  const Output show =
      run_nabla(coord, {"runs", "show", "1", "--db", db, "--json"}, dir_->file("show.out"), 30s);
  ASSERT_EQ(show.exit_code, 0) << show.text;
  EXPECT_EQ(show.point["status"], "failed");
  EXPECT_NE(show.point["error"].get<std::string>().find(tb_->host("a2").address), std::string::npos)
      << show.point["error"];
  // What the rounds before the failure measured is stored with it.
  EXPECT_EQ(show.point["load_agents"].size(), 3u) << show.text;
}

}  // namespace
