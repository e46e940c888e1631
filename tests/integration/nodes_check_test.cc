// `nabla nodes check` and the check `nabla run` runs first, against real
// daemons on a Testbed of two hosts (a, b: one namespace each, removed on
// exit): both daemons keyed on a; on b a nabla-injectd that claims another
// protocol version (its hidden test-only --report-protocol-version). The
// check passes on a, and fails naming the cause for a daemon that is down,
// a wrong key and the version mismatch; `nabla run` refuses the mismatch
// with the table and stores the run as failed.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "nabla/common/netns.hh"
#include "nabla/common/rpc.hh"
#include "nabla/testbed/testbed.hh"
#include "nabla_test_support.hh"
#include "sniffed_testbed.hh"
#include "tier_probe.hh"

namespace {

using nabla::common::CommandResult;
using nabla::testbed::Testbed;
using nabla::testbed::TestbedSpec;
using nabla::testing::connect_in;
using nabla::testing::KeyFile;
using nlohmann::json;

std::string temp_path(const std::string& what) {
  return ::testing::TempDir() + "nodes-check-" + what + "-" + std::to_string(::getpid());
}

// A campaign file of `nodes` (TOML [[node]] tables) with `key` for all.
std::string write_campaign(const std::string& what, const std::string& key,
                           const std::string& nodes, const std::string& target) {
  const std::string path = temp_path(what) + ".toml";
  std::ofstream(path) << "name = \"" << what << "\"\nkey_file = \"" << key << "\"\n"
                      << nodes << "[workload]\ntarget = \"http://" << target
                      << ":9001\"\nrate = 100\n";
  return path;
}

std::string node_toml(const std::string& name, const std::string& address,
                      const std::string& injectd, const std::string& sniffd) {
  std::string t = "[[node]]\nname = \"" + name + "\"\naddress = \"" + address + "\"\n";
  if (!injectd.empty()) t += "injectd = \"" + injectd + "\"\n";
  if (!sniffd.empty()) t += "sniffd = \"" + sniffd + "\"\n";
  return t;
}

TEST(NodesCheck, PassesOnHealthyNodesAndNamesEachCauseOfFailure) {
  NABLA_REQUIRE_ROOT_OR_SKIP();
  nabla::common::sweep_stale_namespaces();
  TestbedSpec spec;
  for (const char* name : {"a", "b"}) spec.hosts.push_back({name, {}});
  Testbed tb(spec);
  const auto& a = tb.host("a");
  const std::string b = tb.host("b").address;
  const KeyFile key("nodes-check");
  const KeyFile wrong_key("nodes-check-wrong");
  tb.start("a", {NABLA_SNIFFD_PATH, "--listen", a.address + ":7312", "--key-file", key.path(),
                 "--interval", "100ms"});
  tb.start("a", {NABLA_INJECTD_PATH, "--listen", a.address + ":7311", "--key-file", key.path()});
  tb.start("b", {NABLA_INJECTD_PATH, "--listen", b + ":7311", "--key-file", key.path(),
                 "--report-protocol-version", "99"});
  connect_in(a.ns, a.address, 7312);
  connect_in(a.ns, a.address, 7311);
  connect_in(a.ns, b, 7311);
  auto nabla = [&](std::vector<std::string> args) {
    args.insert(args.begin(), NABLA_PATH);
    return a.ns.run(args);
  };

  const std::string healthy = write_campaign(
      "healthy", key.path(), node_toml("a", a.address, a.address + ":7311", a.address + ":7312"),
      a.address);
  const CommandResult ok = nabla({"nodes", "check", healthy, "--json"});
  ASSERT_EQ(ok.exit_code, 0) << ok.stdout_text << ok.stderr_text;
  const json report = json::parse(ok.stdout_text);
  EXPECT_TRUE(report["can_serve"].get<bool>());
  const json& injectd = report["nodes"][0]["daemons"][0];
  EXPECT_EQ(injectd["daemon"], "nabla-injectd");
  EXPECT_TRUE(injectd["features"]["nfqueue"]["available"].get<bool>()) << injectd.dump();
  EXPECT_EQ(injectd["protocol_version"], nabla::common::kProtocolVersion);
  // Both clocks are the same kernel's: the offset is within the round trip.
  EXPECT_GT(injectd["clock"]["rtt_ns"].get<std::int64_t>(), 0);
  EXPECT_LE(std::abs(injectd["clock"]["offset_ns"].get<std::int64_t>()),
            injectd["clock"]["rtt_ns"].get<std::int64_t>());
  const json& sniffd = report["nodes"][0]["daemons"][1];
  EXPECT_TRUE(sniffd["features"]["sock_diag"]["available"].get<bool>()) << sniffd.dump();
  const CommandResult table = nabla({"nodes", "check", healthy});
  std::printf("%s", table.stdout_text.c_str());
  EXPECT_EQ(table.exit_code, 0) << table.stdout_text;
  EXPECT_NE(table.stdout_text.find("1 of 1 nodes can serve the campaign"), std::string::npos)
      << table.stdout_text;

  // Nothing listens on 7399: refused at once, named with the node.
  const std::string down =
      write_campaign("down", key.path(),
                     node_toml("a", a.address, a.address + ":7311", a.address + ":7312") +
                         node_toml("c", b, b + ":7399", ""),
                     a.address);
  const CommandResult refused = nabla({"nodes", "check", down});
  EXPECT_EQ(refused.exit_code, 1) << refused.stdout_text << refused.stderr_text;
  EXPECT_NE(refused.stdout_text.find("error: node c: cannot reach nabla-injectd at " + b +
                                     ":7399: Connection refused"),
            std::string::npos)
      << refused.stdout_text;

  const CommandResult bad_key = nabla({"nodes", "check", healthy, "--key-file", wrong_key.path()});
  EXPECT_EQ(bad_key.exit_code, 1) << bad_key.stdout_text;
  EXPECT_NE(bad_key.stdout_text.find("error: node a: nabla-injectd at " + a.address +
                                     ":7311 refused authentication"),
            std::string::npos)
      << bad_key.stdout_text;

  const std::string mismatch = write_campaign(
      "mismatch", key.path(),
      node_toml("a", a.address, "", a.address + ":7312") + node_toml("b", b, b + ":7311", ""),
      a.address);
  const std::string version_error = "error: node b: nabla-injectd at " + b +
                                    ":7311 speaks protocol version 99, this nabla speaks " +
                                    std::to_string(nabla::common::kProtocolVersion);
  const CommandResult old = nabla({"nodes", "check", mismatch});
  EXPECT_EQ(old.exit_code, 1) << old.stdout_text;
  EXPECT_NE(old.stdout_text.find(version_error), std::string::npos) << old.stdout_text;

  // `nabla run` runs the same check first: the table on stderr, the run
  // stored as failed with the first error.
  const std::string db = temp_path("db") + ".db";
  const CommandResult run = nabla({"run", mismatch, "--db", db, "--quiet"});
  EXPECT_EQ(run.exit_code, 1) << run.stderr_text;
  EXPECT_NE(run.stderr_text.find(version_error), std::string::npos) << run.stderr_text;
  EXPECT_NE(run.stderr_text.find("can serve"), std::string::npos) << run.stderr_text;
  EXPECT_NE(run.stderr_text.find("nabla: error: run 1 failed: node b: nabla-injectd"),
            std::string::npos)
      << run.stderr_text;
  for (const std::string& f : {healthy, down, mismatch, db, db + "-wal", db + "-shm"}) {
    ::unlink(f.c_str());
  }
}

}  // namespace
