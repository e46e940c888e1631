// `nabla run` whose load is sent by a load agent (`[workload] agents`) on a
// Testbed of three hosts (client, web, app; removed on exit, even on
// failure): the client host runs the campaign and one nabla-loadd as nobody
// (setpriv), reached with the campaign's key_file; web's nabla-tier calls
// app serial:2 for /a and nothing for /b. The campaign measures web->app
// and the agent's own links, client->web and back (app->web is left out to
// keep it short; the campaign's calls to the agent's port must not be
// measured as links), and must recover the known gradients from the
// agent's samples: 2 for /a and 0 for /b on web->app, 1 for both types on
// each of the agent's links. Every phase's load was a round of the
// agent's, owned by the run, and the stored run keeps the agent.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "campaign_nodes.hh"
#include "nabla/common/netns.hh"
#include "nabla/common/text_file.hh"
#include "nabla/db/sqlite.hh"
#include "nabla/testbed/testbed.hh"
#include "nabla_test_support.hh"
#include "tier_probe.hh"

namespace {

using nabla::testbed::Testbed;
using nabla::testbed::TestbedSpec;
using nlohmann::json;

constexpr uid_t kNobody = 65534;

const json* find_gradient(const json& out, const std::string& link, const std::string& type) {
  for (const json& g : out["gradients"]) {
    if (g["link"] == link && g["type"] == type) return &g;
  }
  return nullptr;
}

std::size_t occurrences(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(CampaignAgents, AnAgentsLoadRecoversTheChainsGradient) {
  NABLA_REQUIRE_ROOT_OR_SKIP();
  NABLA_REQUIRE_PROGRAM_OR_SKIP("setpriv");
  nabla::common::sweep_stale_namespaces();
  TestbedSpec spec;
  spec.subnet = "10.213.24.0/24";
  for (const char* name : {"client", "web", "app"}) spec.hosts.push_back({name, {}});
  Testbed tb(spec);
  const auto& client = tb.host("client");
  const std::string web = tb.host("web").address;
  const std::string app = tb.host("app").address;
  const std::string tier = NABLA_TIER_PATH;
  // As campaign_testbed_test: sleeping service times and workers to spare.
  tb.start("app", {tier, "--listen", app + ":9002", "--workers", "32", "--url",
                   "* service=fixed:200us mode=sleep"});
  tb.start("web",
           {tier, "--listen", web + ":9001", "--workers", "128", "--tier", "app=" + app + ":9002",
            "--url", "/a service=fixed:200us mode=sleep call=app:serial:2", "--url",
            "/b service=fixed:200us mode=sleep"});
  nabla::testing::connect_in(tb.host("web").ns, app, 9002);
  nabla::testing::connect_in(client.ns, web, 9001);

  const std::string tmp = ::testing::TempDir() + "campaign-agents-" + std::to_string(::getpid());
  const std::string key = tmp + ".key";
  nabla::testing::start_keyed_daemons(tb, "client", key, {"--rt-priority", "10"});
  // The agent runs as nobody and reads the campaign's key.
  ASSERT_EQ(::chown(key.c_str(), kNobody, kNobody), 0);
  const std::string agent_log = tmp + ".loadd.log";
  tb.start("client",
           {"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", NABLA_LOADD_PATH,
            "--listen", client.address + ":7313", "--key-file", key, "--log-level", "info"},
           agent_log);
  ASSERT_TRUE(nabla::testing::connect_in(client.ns, client.address, 7313).valid())
      << nabla::common::read_text_file(agent_log);

  std::ostringstream toml;
  toml << nabla::testing::campaign_nodes_toml(tb, "agents", 7, key);
  toml << "[workload]\ntarget = \"http://" << web << ":9001\"\nrate = 600\nconnections = 32\n"
       << "mix = { \"/a\" = 0.5, \"/b\" = 0.5 }\nwarmup = \"500ms\"\n"
       << "agents = [\"" << client.address << ":7313\"]\n"
       << "[links]\ndiscover_for = \"1500ms\"\nexclude = [\"tcp " << app << ":9002 -> " << web
       << "\"]\n"
       << "[gradient]\nschedule = \"sequential\"\nbins = 128\nchunks = 4\nmax_amplitude = \"8ms\"\n"
       << "lease = \"3s\"\nconfidence = 0.99\n"
       << "[truth]\n\"tcp web -> app:9002\" = { \"/a\" = 2, \"/b\" = 0 }\n"
       << "\"tcp client -> web:9001\" = { \"/a\" = 1, \"/b\" = 1 }\n"
       << "\"tcp web:9001 -> client\" = { \"/a\" = 1, \"/b\" = 1 }\n";
  const std::string campaign = tmp + ".toml";
  std::ofstream(campaign) << toml.str();
  const std::string db_path = tmp + ".db";
  const std::string out_path = tmp + ".out";
  const auto done = nabla::testing::run_campaign_in(client.ns, NABLA_PATH, campaign, db_path,
                                                    out_path, std::chrono::seconds(150));
  ASSERT_EQ(done.exit_code, 0) << done.text << "\nagent:\n"
                               << nabla::common::read_text_file(agent_log);
  ASSERT_NE(done.json_at, std::string::npos) << done.text;
  const json out = json::parse(done.text.substr(done.json_at));
  EXPECT_EQ(out["status"], "complete");
  for (const json& g : out["gradients"]) {
    std::cout << "  " << g["link"].get<std::string>() << " " << g["type"].get<std::string>() << " "
              << g["gradient"] << " [" << g["ci_low"] << ", " << g["ci_high"] << "]\n";
  }
  // The known gradient, as campaign_testbed_test holds it: within 10% of 2
  // (3 standard errors on a noisy machine), /b within 0.1 of 0 (likewise).
  const json* a = find_gradient(out, "tcp web -> app:9002", "/a");
  const json* b = find_gradient(out, "tcp web -> app:9002", "/b");
  ASSERT_NE(a, nullptr) << out["links"].dump(2);
  ASSERT_NE(b, nullptr);
  const double se = (*a)["standard_error"].get<double>();
  EXPECT_LE(std::abs((*a)["gradient"].get<double>() - 2.0), std::max(0.2, 3.0 * se));
  const double se_b = (*b)["standard_error"].get<double>();
  EXPECT_LE(std::abs((*b)["gradient"].get<double>()), std::max(0.1, 3.0 * se_b));
  // The agent's node is sniffed and injected like any other: each request
  // and each response crosses its links once.
  for (const std::string link : {"tcp client -> web:9001", "tcp web:9001 -> client"}) {
    for (const char* type : {"/a", "/b"}) {
      const json* g = find_gradient(out, link, type);
      ASSERT_NE(g, nullptr) << link << " " << type << "\n" << out["links"].dump(2);
      const double se_g = (*g)["standard_error"].get<double>();
      EXPECT_LE(std::abs((*g)["gradient"].get<double>() - 1.0), std::max(0.1, 3.0 * se_g))
          << link << " " << type;
    }
  }
  // Only the service's links were measured: the campaign's own calls to
  // the agent's port are no link (without the filter they were four).
  for (const json& g : out["gradients"]) {
    EXPECT_EQ(g["link"].get<std::string>().find(":7313"), std::string::npos) << g["link"];
  }

  // Every phase's load was a round of the agent's, owned by this run:
  // discovery, training, the adaptive sub-phase and the active phase at
  // least.
  const std::string log = nabla::common::read_text_file(agent_log);
  const std::string owner = "of owner nabla-run-" + std::to_string(out["run_id"].get<int>());
  EXPECT_GE(occurrences(log, owner), 3u) << log;
  {
    nabla::db::Database db = nabla::db::Database::open(db_path, nabla::db::OpenMode::kReadOnly);
    nabla::db::Statement st(
        db, "SELECT config FROM runs WHERE id = " + std::to_string(out["run_id"].get<int>()));
    ASSERT_TRUE(st.step());
    const json config = json::parse(st.column_text(0));
    EXPECT_EQ(config["workload"]["agents"], json::array({client.address + ":7313/symmetric"}))
        << config.dump(2);
  }
  for (const std::string& f :
       {key, campaign, db_path, db_path + "-wal", db_path + "-shm", out_path, agent_log}) {
    ::unlink(f.c_str());
  }
}

}  // namespace
