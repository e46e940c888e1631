// An amplitude sweep with step verification on a real non-linear service
// (client → web → app, one namespace each, keyed daemons on every host):
// web's nabla-tier writes each response in two parts with Nagle's algorithm
// on (--split-response), so the second part waits for the client's ACK of
// the first (a Linux client delays it ~40 ms, longer than the 2 ms pause)
// and a delay on the response link counts twice; app's tier answers in one
// send. Each split response takes ~40 ms, so the load spreads over many
// connections to stay well below their capacity. The campaign sweeps
// 4 and 16 ms on both response links and holds 16 ms for a step. Robust
// checks only, the gradients on a calm host: at 16 ms the split link's step
// gradient is above 1.3 and the single-send link's below it, and the
// single-send link's spectral CI agrees with its step and does not lie
// above 1.3. On any host: the sweep and step rows are stored; `nabla runs
// show` carries them; `nabla predict --strict` refuses a delay beyond 2x
// the amplitudes held and predicts within them.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "campaign_nodes.hh"
#include "cpu_steal.hh"
#include "nabla/common/text_file.hh"
#include "nabla/db/sqlite.hh"
#include "nabla/testbed/testbed.hh"
#include "nabla_test_support.hh"
#include "tier_probe.hh"

namespace {

using nabla::common::ChildProcess;
using nabla::testbed::Testbed;
using nabla::testbed::TestbedSpec;
using Clock = std::chrono::steady_clock;
using nlohmann::json;

std::int64_t count(nabla::db::Database& db, const std::string& sql) {
  nabla::db::Statement st(db, sql);
  EXPECT_TRUE(st.step()) << sql;
  return st.column_int64(0);
}

const json* find_gradient(const json& show, const std::string& src, const std::string& dst) {
  for (const json& g : show["gradients"]) {
    const std::string label = g["link"].get<std::string>();
    if (label.rfind("tcp " + src, 0) == 0 && label.find("-> " + dst) != std::string::npos) {
      return &g;
    }
  }
  return nullptr;
}

// The child's exit code and everything it wrote.
std::pair<int, std::string> run_in(const nabla::common::NetNamespace& ns,
                                   const std::vector<std::string>& argv, const std::string& out,
                                   std::chrono::seconds limit) {
  ChildProcess child(argv, &ns, out);
  int code = child.wait(limit);
  if (code == -1) child.signal(SIGKILL);
  return {code, nabla::common::read_text_file(out)};
}

std::string campaign_toml(const Testbed& tb, const std::string& key) {
  const std::string client = tb.host("client").address;
  const std::string web = tb.host("web").address;
  std::ostringstream toml;
  toml << nabla::testing::campaign_nodes_toml(tb, "sweep", 11, key);
  toml << "[workload]\ntarget = \"http://" << web << ":9001\"\nrate = 300\nconnections = 64\n"
       << "mix = { \"/a\" = 1.0 }\nwarmup = \"300ms\"\n"
       // Only the two response links: web -> client (split) and app -> web.
       << "[links]\ndiscover_for = \"1s\"\nexclude = [\"tcp " << client << " -> " << web
       << ":9001\", \"tcp " << web << " -> " << tb.host("app").address
       << ":9002\"]\n"
       // The adaptive amplitude pinned to 16 ms, so the headline and the step
       // are at the amplitude where the split response waits for the ACK.
       << "[gradient]\nbins = 64\nchunks = 2\nmin_amplitude = \"16ms\"\nmax_amplitude = \"16ms\"\n"
       << "lease = \"3s\"\nrepeats = 0\namplitudes = [\"4ms\", \"16ms\"]\nverify = true\n";
  return toml.str();
}

TEST(CampaignSweep, SplitResponsesRaiseTheReturnLinksGradient) {
  NABLA_REQUIRE_ROOT_OR_SKIP();
  const auto t_begin = Clock::now();
  nabla::common::sweep_stale_namespaces();
  TestbedSpec spec;
  for (const char* name : {"client", "web", "app"}) spec.hosts.push_back({name, {}});
  Testbed tb(spec);
  const auto& client = tb.host("client");
  const std::string web = tb.host("web").address;
  const std::string app = tb.host("app").address;
  const std::string tier = NABLA_TIER_PATH;
  tb.start("app", {tier, "--listen", app + ":9002", "--workers", "4", "--url",
                   "* service=fixed:100us mode=sleep bytes=600"});
  // The first 64 bytes, then the rest 2 ms later or, Nagle holding it, once
  // the client ACKs the first part.
  tb.start("web",
           {tier, "--listen", web + ":9001", "--workers", "16", "--tier", "app=" + app + ":9002",
            "--url", "/a service=fixed:100us mode=sleep bytes=600 call=app:serial:1",
            "--split-response", "64", "--split-pause", "2ms"});
  nabla::testing::connect_in(tb.host("web").ns, app, 9002);
  nabla::testing::connect_in(client.ns, web, 9001);
  const std::string tmp = ::testing::TempDir() + "sweep-" + std::to_string(::getpid());
  const std::string key = tmp + ".key";
  nabla::testing::start_keyed_daemons(tb, "client", key);
  const std::string campaign = tmp + ".toml";
  std::ofstream(campaign) << campaign_toml(tb, key);
  const std::string db_path = tmp + ".db";
  const std::string out = tmp + ".out";

  nabla::testing::CpuSteal steal;
  const auto [code, log] =
      run_in(client.ns, {NABLA_PATH, "run", campaign, "--db", db_path, "--json"}, out,
             std::chrono::seconds(50));
  std::printf("machine %s\n", steal.describe().c_str());
  ASSERT_EQ(code, 0) << log;
  // Notes (stderr) and JSON (stdout) share the file; the JSON starts at run_id.
  const std::size_t json_at = log.find("{\n  \"run_id\"");
  ASSERT_NE(json_at, std::string::npos) << log;
  std::cout << log.substr(0, json_at);
  for (const json& g : json::parse(log.substr(json_at))["gradients"]) {
    EXPECT_EQ(g["amplitudes"].size(), 2u) << g.dump(2);
    EXPECT_TRUE(g["linearity"].is_object()) << g.dump(2);
    EXPECT_TRUE(g["step"].is_object()) << g.dump(2);
  }
  const auto [show_code, show_text] =
      run_in(client.ns, {NABLA_PATH, "runs", "show", "1", "--db", db_path, "--json"}, out,
             std::chrono::seconds(10));
  ASSERT_EQ(show_code, 0) << show_text;
  const json show = json::parse(show_text);
  const json* split = find_gradient(show, "web", "client");
  const json* single = find_gradient(show, "app", "web");
  ASSERT_NE(split, nullptr) << show["gradients"].dump(2);
  ASSERT_NE(single, nullptr) << show["gradients"].dump(2);
  for (const json* g : {split, single}) {
    ASSERT_EQ((*g)["amplitudes"].size(), 2u) << g->dump(2);
    EXPECT_EQ((*g)["amplitudes"][1]["amplitude_ns"], 16'000'000);
    ASSERT_FALSE((*g)["step"].is_null()) << g->dump(2);
    EXPECT_FALSE((*g)["linearity"].is_null());
  }
  // Generous bounds on a loaded 2-core machine: at 16 ms the steps read
  // 1.6-1.9 on the split link and 0.6-0.9 on the other (standard errors
  // ~0.2). The split link's spectral estimate is not bounded: a square wave
  // beating against the client's delayed-ACK timer read it anywhere from
  // 0.9 to 1.9 under other tests' load, while the step, windows of 12 bins
  // each, stays on the mechanism. The single-send link's spectral estimate at
  // 16 ms is judged against its step, by their CIs: its point alone read
  // 1.39 [0.62, 2.16] on a busy host, where the step read 0.78.
  const double split_step = (*split)["step"]["gradient"].get<double>();
  const double single_step = (*single)["step"]["gradient"].get<double>();
  // When the step was held against the training's mean, measured minutes
  // before, a host that steals CPU time (13-19% whenever it was counted)
  // read 0.7-1.3 on the split link in 4 runs of 8 and up to 6 on the other.
  // The step's baseline is now its own off windows, beside the on ones, but
  // it has not been looped on such a host yet: the mechanism is judged on a
  // calm host only; the rows, counts and predictions below on any.
  if (steal.calm()) {
    EXPECT_GT(split_step, 1.3) << split->dump(2);
    EXPECT_LT(single_step, 1.3) << single->dump(2);
    EXPECT_GT(split_step, single_step);
    EXPECT_FALSE((*single)["step"]["disagrees"].get<bool>()) << single->dump(2);
    EXPECT_LT((*single)["amplitudes"][1]["ci_low"].get<double>(), 1.3) << single->dump(2);
  } else {
    std::printf("steps not judged on this host: split %.3f, single %.3f\n", split_step,
                single_step);
  }
  {
    nabla::db::Database db = nabla::db::Database::open(db_path, nabla::db::OpenMode::kReadOnly);
    EXPECT_EQ(count(db, "SELECT COUNT(*) FROM gradient_amplitudes"), 4);
    EXPECT_EQ(count(db, "SELECT COUNT(*) FROM phases WHERE kind = 'step'"), 2);
    EXPECT_EQ(count(db,
                    "SELECT COUNT(*) FROM injections i JOIN phases p ON p.id = i.phase_id "
                    "WHERE p.kind = 'step' AND i.waveform = 'square' AND i.actual_mean_ns > 0"),
              2);
  }
  // Predictions within 2x the swept range, and a refusal beyond it.
  const std::string set = "--set=web->client=+12ms";
  // Beyond 2x the largest amplitude the daemon really held (a stalled host
  // stretches 16 ms asked to 21 ms held): 3x it.
  const double held_ms = (*split)["actual_amplitude_ns"].get<double>() / 1e6;
  const std::string far_set =
      "--set=web->client=+" + std::to_string(static_cast<int>(std::ceil(3.0 * held_ms))) + "ms";
  const auto [ok_code, ok_text] = run_in(
      client.ns, {NABLA_PATH, "predict", "--db", db_path, "--run", "1", set, "--strict", "--json"},
      out, std::chrono::seconds(10));
  EXPECT_EQ(ok_code, 0) << ok_text;
  const auto [far_code, far_text] =
      run_in(client.ns, {NABLA_PATH, "predict", "--db", db_path, "--run", "1", far_set, "--strict"},
             out, std::chrono::seconds(10));
  EXPECT_EQ(far_code, 1) << far_text;
  EXPECT_NE(far_text.find("beyond 2x its measured amplitudes"), std::string::npos) << far_text;
  for (const std::string& f : {key, campaign, db_path, db_path + "-wal", db_path + "-shm", out}) {
    ::unlink(f.c_str());
  }
  EXPECT_LT(Clock::now() - t_begin, std::chrono::seconds(45));
}

}  // namespace
