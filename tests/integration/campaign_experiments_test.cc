// Fault experiments end to end: `nabla run` of a campaign of experiments only
// ([gradient] enabled = false) on a Testbed of two hosts (client, web: one
// namespace each, removed on exit), a nabla-tier on web answering in 200 us
// and a keyed nabla-injectd there. Each experiment delays every response
// web -> client by 20 ms for a 2 s fault window between a 2 s baseline and
// a 2 s recovery. Its error share stays far below a 50% bound in every
// window, which always passes (a Wilson interval exists for any count). A
// p50 and p99 bound of 2 s, far above the fault window's
// response times, never fails and passes wherever its CI exists; a bound of
// 5 ms, far below the injected delay alone, never passes in the fault window
// and fails there wherever its CI exists. Both are stored with their checks
// and shown by `nabla runs show`, and no injection rule is left behind.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "nabla/common/netns.hh"
#include "nabla/common/rpc_auth.hh"
#include "nabla/common/text_file.hh"
#include "nabla/db/sqlite.hh"
#include "nabla/testbed/testbed.hh"
#include "nabla_test_support.hh"
#include "tier_probe.hh"

namespace {

using nabla::common::ChildProcess;
using nabla::testbed::Testbed;
using nabla::testbed::TestbedSpec;
using nlohmann::json;

std::string experiment(const std::string& name, const std::string& bound) {
  return "[[experiment]]\nname = \"" + name +
         "\"\nnodes = [\"web\"]\ndelay = \"20ms\"\nbaseline = \"2s\"\nfault = \"2s\"\n"
         "recovery = \"2s\"\nslo = { p50 = \"" +
         bound + "\", p99 = \"" + bound + "\", errors = \"50%\" }\n";
}

// Runs `args` in the client namespace; returns the exit code and the output.
std::pair<int, std::string> run_in(const Testbed& tb, const std::vector<std::string>& args,
                                   const std::string& out_path, int timeout_s) {
  ChildProcess child(args, &tb.host("client").ns, out_path);
  const int code = child.wait(std::chrono::seconds(timeout_s));
  if (code == -1) child.signal(SIGKILL);
  return {code, nabla::common::read_text_file(out_path)};
}

TEST(CampaignExperiments, ADelayFarBelowTheSloPassesAndFarAboveFails) {
  NABLA_REQUIRE_ROOT_OR_SKIP();
  nabla::common::sweep_stale_namespaces();
  TestbedSpec spec;
  for (const char* name : {"client", "web"}) spec.hosts.push_back({name, {}});
  Testbed tb(spec);
  const std::string client = tb.host("client").address;
  const std::string web = tb.host("web").address;
  tb.start("web", {NABLA_TIER_PATH, "--listen", web + ":9001", "--workers", "8", "--url",
                   "* service=fixed:200us mode=sleep"});
  const std::string tmp = ::testing::TempDir() + "experiments-" + std::to_string(::getpid());
  const std::string key = tmp + ".key";
  nabla::common::generate_key_file(key);
  tb.start("web", {NABLA_INJECTD_PATH, "--listen", web + ":7311", "--key-file", key});
  nabla::testing::connect_in(tb.host("client").ns, web, 9001);
  nabla::testing::connect_in(tb.host("client").ns, web, 7311);

  std::ostringstream toml;
  toml << "name = \"experiments\"\nseed = 3\nkey_file = \"" << key << "\"\n"
       << "[[node]]\nname = \"client\"\naddress = \"" << client << "\"\n"
       << "[[node]]\nname = \"web\"\naddress = \"" << web << "\"\ninjectd = \"" << web
       << ":7311\"\n"
       // 1000 rps, 2000 samples a window; 64 connections carry 20 ms
       // replies without queueing.
       << "[workload]\ntarget = \"http://" << web << ":9001\"\nrate = 1000\nconnections = 64\n"
       << "warmup = \"500ms\"\n"
       << "[links]\ndiscover = false\ninclude = [\"tcp " << web << ":9001 -> " << client
       << "\"]\n[gradient]\nenabled = false\nlease = \"2s\"\n"
       << experiment("roomy", "2s") << experiment("tight", "5ms");
  const std::string campaign = tmp + ".toml";
  std::ofstream(campaign) << toml.str();
  const std::string db_path = tmp + ".db";
  const std::string out_path = tmp + ".out";

  const auto [code, text] =
      run_in(tb, {NABLA_PATH, "run", campaign, "--db", db_path, "--json", "--skip-node-check"},
             out_path, 60);
  ASSERT_EQ(code, 0) << text;
  const std::size_t json_at = text.find("{\n  \"run_id\"");
  ASSERT_NE(json_at, std::string::npos) << text;
  const json out = json::parse(text.substr(json_at));
  ASSERT_EQ(out["experiments"].size(), 2u) << out.dump(2);
  // A term without a CI is inconclusive by the method: on a busy shared
  // machine the response times of a 2 s window can need more thinning to be
  // independent than 2000 samples allow for a p99 (the spikes come in
  // bursts). So the verdicts are held to what the CIs say: the roomy bound
  // never fails and passes wherever there is a CI; the tight one never
  // passes in the fault window and fails there wherever there is a CI.
  const std::string roomy = out["experiments"][0]["verdict"];
  const std::string tight = out["experiments"][1]["verdict"];
  EXPECT_TRUE(roomy == "pass" || roomy == "inconclusive") << roomy;
  EXPECT_TRUE(tight == "fail" || tight == "inconclusive") << tight;
  // The 20 ms delay shows in the mean response time; no gradients, no prediction.
  EXPECT_GT(out["experiments"][0]["observed_change_ns"].get<double>(), 15e6);
  EXPECT_TRUE(out["experiments"][0]["predicted_change_ns"].is_null());

  const std::int64_t run_id = out["run_id"].get<std::int64_t>();
  {
    nabla::db::Database db = nabla::db::Database::open(db_path, nabla::db::OpenMode::kReadOnly);
    nabla::db::Statement st(db,
                            "SELECT e.name, c.window, c.term, c.verdict, c.ci_low IS NOT NULL, "
                            "c.value FROM experiment_checks c JOIN experiments e ON e.id = "
                            "c.experiment_id ORDER BY c.id");
    int checks = 0, with_ci = 0;
    while (st.step()) {
      ++checks;
      const std::string what = st.column_text(0) + " " + st.column_text(1) + " " +
                               st.column_text(2) + " " + st.column_text(3);
      const std::string verdict = st.column_text(3);
      const bool has_ci = st.column_int64(4) != 0;
      with_ci += has_ci ? 1 : 0;
      const bool fault = st.column_text(1) == "fault";
      if (st.column_text(2) == "errors") {
        // A Wilson interval always exists: a 20 ms delay against a 1 s
        // timeout fails no request, far below 50%.
        EXPECT_TRUE(has_ci) << what;
        EXPECT_EQ(verdict, "pass") << what;
      } else if (st.column_text(0) == "roomy") {
        EXPECT_NE(verdict, "fail") << what;
        EXPECT_LT(st.column_double(5), 2e9) << what;
        if (has_ci) {
          EXPECT_EQ(verdict, "pass") << what;
        }
      } else if (fault) {
        EXPECT_NE(verdict, "pass") << what;
        EXPECT_GT(st.column_double(5), 5e6) << what;  // the delay alone is 20 ms
        if (has_ci) {
          EXPECT_EQ(verdict, "fail") << what;
        }
      }
    }
    EXPECT_EQ(checks, 2 * 3 * 3);  // two experiments x three windows x p50, p99, errors
    std::cout << with_ci << " of " << checks << " checks had a CI\n";
  }
  const auto [show_code, shown] = run_in(
      tb, {NABLA_PATH, "runs", "show", std::to_string(run_id), "--db", db_path}, out_path, 10);
  EXPECT_EQ(show_code, 0) << shown;
  EXPECT_NE(shown.find("experiments"), std::string::npos) << shown;
  EXPECT_NE(shown.find("tight"), std::string::npos) << shown;
  std::cout << shown;

  std::istringstream rules(tb.host("web").ns.run({"iptables-save"}).stdout_text);
  for (std::string line; std::getline(rules, line);) {
    EXPECT_NE(line.rfind("-A NABLA-", 0), 0u) << "left behind: " << line;
  }
  for (const std::string& f :
       {key, campaign, db_path, db_path + "-wal", db_path + "-shm", out_path}) {
    ::unlink(f.c_str());
  }
}

}  // namespace
