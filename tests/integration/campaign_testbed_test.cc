// `nabla run` end to end on a Testbed of three hosts (client, web, app: one
// namespace each, bridged in a switch namespace, 10.213.0.0/24 inside them
// only; all removed on exit, even on failure):
//   client (nabla run, inside the client namespace)
//     → web nabla-tier: /a calls app serial:2, /b calls nothing
//     → app nabla-tier,
// a keyed nabla-injectd and nabla-sniffd on every host. The campaign
// discovers the links, trains, and measures every link; web→app (the request
// direction) must show gradient about 2 for /a (within 30%: the pipeline's
// correctness; its accuracy is bench/'s) and 0 for /b (CI reaching 0), and
// the run, links, phases, injections, samples
// and gradients must be stored, and web->app must carry at least one message
// per /a request by the sniffers' counts. A second run is SIGINT-ed while an injection
// is active: it exits 1, the run is stored 'failed' ("interrupted"), and no
// injection rule is left in any namespace right after it exits (it stopped
// its injection itself, not through the lease).
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>

#include "campaign_nodes.hh"
#include "nabla/common/netns.hh"
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

// Rules inside the injectors' chains (an active injection), over every host.
int injection_rules(const Testbed& tb) {
  int n = 0;
  for (const auto& h : tb.hosts()) {
    std::istringstream lines(h->ns.run({"iptables-save"}).stdout_text);
    for (std::string line; std::getline(lines, line);) {
      if (line.rfind("-A NABLA-", 0) == 0) ++n;
    }
  }
  return n;
}

std::int64_t count(nabla::db::Database& db, const std::string& sql) {
  nabla::db::Statement st(db, sql);
  EXPECT_TRUE(st.step()) << sql;
  return st.column_int64(0);
}

const json* find_gradient(const json& out, const std::string& link, const std::string& type) {
  for (const json& g : out["gradients"]) {
    if (g["link"] == link && g["type"] == type) return &g;
  }
  return nullptr;
}

TEST(CampaignTestbed, MeasuresChainGradientsAndStopsCleanlyOnSigint) {
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
  // Sleeping service times keep the two shared cores free for the load
  // generator and the injectors (spinning tiers make the noise the test).
  // Workers to spare: on a machine whose CPUs are taken by others every
  // 200 us sleep stretches to milliseconds, and a tier short of workers then
  // queues /b behind /a's delayed calls, a real gradient the truth lacks.
  tb.start("app", {tier, "--listen", app + ":9002", "--workers", "32", "--url",
                   "* service=fixed:200us mode=sleep"});
  tb.start("web",
           {tier, "--listen", web + ":9001", "--workers", "128", "--tier", "app=" + app + ":9002",
            "--url", "/a service=fixed:200us mode=sleep call=app:serial:2", "--url",
            "/b service=fixed:200us mode=sleep"});
  nabla::testing::connect_in(tb.host("web").ns, app, 9002);
  nabla::testing::connect_in(client.ns, web, 9001);

  const std::string tmp = ::testing::TempDir() + "campaign-" + std::to_string(::getpid());
  const std::string key = tmp + ".key";
  nabla::testing::start_keyed_daemons(tb, "client", key, {"--rt-priority", "10"});

  std::ostringstream toml;
  toml << nabla::testing::campaign_nodes_toml(tb, "chain", 7, key);
  toml << "[workload]\ntarget = \"http://" << web << ":9001\"\nrate = 600\nconnections = 32\n"
       << "mix = { \"/a\" = 0.5, \"/b\" = 0.5 }\nwarmup = \"500ms\"\n"
       // The client's own links (truth 1 for both types) are skipped to keep
       // the test within its time budget; docs/benchmarks.md measures them.
       << "[links]\ndiscover_for = \"1500ms\"\nexclude = [\"tcp " << client.address << " -> " << web
       << ":9001\", \"tcp " << web << ":9001 -> " << client.address
       << "\"]\n"
       // N = 128, an 8 ms cap (a swing the web tier takes without queueing
       // up; the campaign holds /a's 2x swing to it, so web->app gets 4 ms)
       // and M = 4 chunks to stay in the time budget: on this shared 2-core
       // VM the training asks for 4-12 ms at d = 30, and with N = 64 the SNR
       // of /a was 9-27 (4-8% standard error), too close to the 10% bound.
       << "[gradient]\nschedule = \"sequential\"\nbins = 128\nchunks = 4\nmax_amplitude = \"8ms\"\n"
       << "lease = \"3s\"\n"
       // Every active phase measured twice (ratio 0): the repeat-and-combine
       // path runs on every link, whatever the machine's noise.
       << "repeats = 1\nrepeat_noise_ratio = 0\n"
       // The test holds four CIs to their truth at once: Bonferroni, 1 -
       // 0.05/4 each (at 95% each, one of four misses in ~1 run of 5; seen:
       // web->app /b at [.., -0.003] for a truth of 0).
       << "confidence = 0.9875\n"
       << "[truth]\n\"tcp web -> app:9002\" = { \"/a\" = 2, \"/b\" = 0 }\n"
       << "\"tcp app:9002 -> web\" = { \"/a\" = 2, \"/b\" = 0 }\n";
  const std::string campaign = tmp + ".toml";
  std::ofstream(campaign) << toml.str();
  const std::string db_path = tmp + ".db";
  const std::string out_path = tmp + ".out";

  // ---- a complete run
  const auto done = nabla::testing::run_campaign_in(client.ns, NABLA_PATH, campaign, db_path,
                                                    out_path, std::chrono::seconds(75));
  ASSERT_EQ(done.exit_code, 0) << done.text;
  ASSERT_NE(done.json_at, std::string::npos) << done.text;
  std::cout << done.text.substr(0, done.json_at);
  const json out = json::parse(done.text.substr(done.json_at));
  std::cout << "training: " << out["training"].dump() << "\n";
  EXPECT_EQ(out["status"], "complete");
  std::cout << "measured:\n";
  for (const json& g : out["gradients"]) {
    std::cout << "  " << g["link"].get<std::string>() << " " << g["type"].get<std::string>() << " "
              << g["gradient"] << " [" << g["ci_low"] << ", " << g["ci_high"]
              << "] dl=" << g["actual_amplitude_ns"] << " snr=" << g["snr"]
              << " thr=" << g["throughput_change"] << " msgs=" << g["messages_per_txn"] << " ["
              << g["messages_ci_low"] << ", " << g["messages_ci_high"] << "]\n";
  }
  const json* a = find_gradient(out, "tcp web -> app:9002", "/a");
  const json* b = find_gradient(out, "tcp web -> app:9002", "/b");
  ASSERT_NE(a, nullptr) << out["links"].dump(2);
  ASSERT_NE(b, nullptr);
  // The pipeline's correctness, not its accuracy: /a reads about 2 (its two
  // serial calls), not 1 or 3, and its CI reaches that neighbourhood. How
  // close to 2 depends on the machine: a quiet VM measured 2.05-2.08 run
  // after run, a fresh machine of the same kind 2.16 and 2.28 on a quiet CI
  // run (both phases agreeing, standard error 0.08), and 2.05-2.55 beside a
  // build (the tiers on two shared cores slow down while more /a requests
  // are in flight). Accuracy is bench/'s: the demo's chains, which include
  // serial calls like this one, in bench/campaign/schedule.sh.
  const double se = (*a)["standard_error"].get<double>();
  EXPECT_LE(std::abs((*a)["gradient"].get<double>() - 2.0), std::max(0.6, 3.0 * se))
      << "standard error " << se;
  EXPECT_LE((*a)["ci_low"].get<double>(), 2.0 * 1.3);
  EXPECT_GE((*a)["ci_high"].get<double>(), 2.0 * 0.7);
  // /b is async: 0 by construction, within the demo's tolerance (10% of
  // max(truth, 1)) or, as for /a, within 3 standard errors when the run is
  // too noisy for it (a quiet 2-core VM measured -0.123 +- 0.10). Its CI
  // must reach 0 to within 0.08, the same absolute slack /a's CI gets: the
  // shared cores couple the two types a little (e.g. -0.063 [-0.12, -0.0024],
  // both phases negative).
  const double se_b = (*b)["standard_error"].get<double>();
  EXPECT_LE(std::abs((*b)["gradient"].get<double>()), std::max(0.1, 3.0 * se_b))
      << "standard error " << se_b;
  EXPECT_LE((*b)["ci_low"].get<double>(), 0.08);
  EXPECT_GE((*b)["ci_high"].get<double>(), -0.08);
  EXPECT_LT(std::abs((*a)["throughput_change"].get<double>()), 0.05);
  EXPECT_GT((*a)["actual_amplitude_ns"].get<double>(), 0.0);
  // Each /a request makes web send app two requests (serial:2), one data
  // segment or more each; the sniffers scan every 100 ms, so the window
  // holds many scans.
  ASSERT_TRUE((*a)["messages_per_txn"].is_number()) << a->dump();
  EXPECT_GE((*a)["messages_per_txn"].get<double>(), 1.0);
  EXPECT_LE((*a)["messages_per_txn"].get<double>(), 6.0);

  {
    nabla::db::Database db = nabla::db::Database::open(db_path, nabla::db::OpenMode::kReadOnly);
    const std::int64_t run_id = out["run_id"].get<std::int64_t>();
    const std::string where = " WHERE run_id = " + std::to_string(run_id);
    EXPECT_EQ(count(db,
                    "SELECT COUNT(*) FROM runs WHERE status = 'complete' AND ended_ns IS "
                    "NOT NULL AND id = " +
                        std::to_string(run_id)),
              1);
    EXPECT_EQ(count(db, "SELECT COUNT(*) FROM nodes" + where), 3);
    // The sniffers' records, the web->app sending side joined to its link.
    EXPECT_GT(
        count(db,
              "SELECT COUNT(*) FROM flows f JOIN links l ON l.id = f.link_id WHERE f.run_id = " +
                  std::to_string(run_id) +
                  " AND l.src_host = 'web' AND l.dst_port = "
                  "9002 AND f.remote_port = 9002 AND f.direction = 'out'"),
        0);
    EXPECT_GE(count(db, "SELECT COUNT(*) FROM links" + where), 2);
    const std::int64_t measured = static_cast<std::int64_t>(out["gradients"].size()) / 2;
    EXPECT_EQ(count(db, "SELECT COUNT(*) FROM gradients" + where), 2 * measured);
    EXPECT_EQ(count(db, "SELECT COUNT(*) FROM phases" + where + " AND kind = 'active'"),
              2 * measured);
    EXPECT_EQ(count(db, "SELECT COUNT(*) FROM phases" + where + " AND kind = 'training'"), 1);
    EXPECT_EQ(count(db, "SELECT COUNT(*) FROM injections" + where +
                            " AND actual_mean_ns > 0 AND requested_delay_ns > 0"),
              3 * measured);  // adaptive + two active phases per link
    EXPECT_GT(count(db,
                    "SELECT COUNT(*) FROM samples s JOIN phases p ON p.id = s.phase_id "
                    "WHERE p.kind = 'training' AND p.run_id = " +
                        std::to_string(run_id)),
              4 * 128 * 5);
  }

  // ---- a run interrupted while an injection is active
  {
    ChildProcess run({NABLA_PATH, "run", campaign, "--db", db_path, "--quiet"}, &client.ns,
                     out_path);
    const auto deadline = Clock::now() + std::chrono::seconds(40);
    while (injection_rules(tb) == 0 && Clock::now() < deadline && run.running()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    ASSERT_GT(injection_rules(tb), 0)
        << "no injection started: " << nabla::common::read_text_file(out_path);
    run.signal(SIGINT);
    const auto t_signal = Clock::now();
    const int code = run.wait(std::chrono::seconds(10));
    if (code == -1) run.signal(SIGKILL);
    EXPECT_EQ(code, 1) << nabla::common::read_text_file(out_path);
    // The campaign stopped its injection itself: no rule waits for the 3 s lease.
    EXPECT_EQ(injection_rules(tb), 0);
    EXPECT_LT(Clock::now() - t_signal, std::chrono::seconds(5));
  }
  {
    nabla::db::Database db = nabla::db::Database::open(db_path, nabla::db::OpenMode::kReadOnly);
    EXPECT_EQ(count(db,
                    "SELECT COUNT(*) FROM runs WHERE status = 'failed' AND error LIKE "
                    "'%interrupted by signal 2%'"),
              1);
    EXPECT_EQ(count(db, "SELECT COUNT(*) FROM runs WHERE status = 'running'"), 0);
    nabla::db::Statement ic(db, "PRAGMA integrity_check");
    ASSERT_TRUE(ic.step());
    EXPECT_EQ(ic.column_text(0), "ok");
  }
  for (const std::string& f :
       {key, campaign, db_path, db_path + "-wal", db_path + "-shm", out_path}) {
    ::unlink(f.c_str());
  }
  EXPECT_LT(Clock::now() - t_begin, std::chrono::seconds(90));
}

}  // namespace
