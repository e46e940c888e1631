// The report's data model against real stored runs (stored_runs.hh): the
// page embeds the run's numbers exactly (the JSON block read back out of the
// HTML gives the database's doubles), has the sections and charts the run's
// rows call for, says what a failed run is missing, and refuses an unknown
// run id.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "nabla/db/reads.hh"
#include "nabla/db/store.hh"
#include "nabla/report/report.hh"
#include "stored_runs.hh"

namespace nabla::report {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// The page's data block, parsed back out of the HTML.
json data_block(const std::string& html) {
  const std::string open = R"(<script type="application/json" id="nabla-data">)";
  const auto start = html.find(open);
  EXPECT_NE(start, std::string::npos);
  const auto end = html.find("</script>", start);
  EXPECT_NE(end, std::string::npos);
  return json::parse(html.substr(start + open.size(), end - start - open.size()));
}

std::set<std::string> chart_kinds(const json& charts) {
  std::set<std::string> kinds;
  for (const json& c : charts) kinds.insert(c["kind"].get<std::string>());
  return kinds;
}

class ReportData : public ::testing::Test {
 protected:
  void SetUp() override {
    db_path_ = ::testing::TempDir() + "report-data-" + std::to_string(::getpid()) + "-" +
               ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".db";
  }
  void TearDown() override {
    for (const std::string& f : {db_path_, db_path_ + "-wal", db_path_ + "-shm"}) fs::remove(f);
  }

  json page_data(std::vector<std::int64_t> ids) {
    db::Store store = db::Store::open_read_only(db_path_);
    return data_block(render_report_html(
        build_report_data(store.database(), ids, {"2026-01-01T00:00:00Z", db_path_})));
  }

  std::string db_path_;
};

TEST_F(ReportData, EmbedsTheStoredGradientsExactly) {
  const std::int64_t run = testing::store_fake_campaign_run(db_path_);
  const json data = page_data({run});
  ASSERT_EQ(data["runs"].size(), 1u);
  const json& page = data["runs"][0];
  db::Store store = db::Store::open_read_only(db_path_);
  const auto stored = db::run_gradients(store.database(), run);
  ASSERT_EQ(stored.size(), 4u);  // two links x two types
  ASSERT_EQ(page["gradients"].size(), stored.size());
  for (std::size_t i = 0; i < stored.size(); ++i) {
    const json& g = page["gradients"][i];
    EXPECT_EQ(g["link"], stored[i].link.label);
    EXPECT_EQ(g["type"], stored[i].type);
    EXPECT_EQ(g["value"].get<double>(), stored[i].gradient.value);
    ASSERT_TRUE(stored[i].gradient.ci_low && stored[i].gradient.ci_high);
    EXPECT_EQ(g["ci_low"].get<double>(), *stored[i].gradient.ci_low);
    EXPECT_EQ(g["ci_high"].get<double>(), *stored[i].gradient.ci_high);
    EXPECT_EQ(g["confidence"].get<double>(), stored[i].gradient.confidence);
    // The fake sniffers' counts never move: no messages per transaction.
    ASSERT_TRUE(g.contains("messages_per_txn"));
    EXPECT_EQ(g["messages_per_txn"].is_null(), !stored[i].gradient.messages_per_txn.has_value());
  }
  // The campaign file's truth is carried beside the measured value.
  bool truth_seen = false;
  for (const json& g : page["gradients"]) {
    if (g["type"] == "/a" && g["link"] == "tcp web/client:0 -> app/tier:9002") {
      EXPECT_EQ(g["truth"].get<double>(), testing::kTruthWebToAppA);
      truth_seen = true;
    }
  }
  EXPECT_TRUE(truth_seen) << page["gradients"].dump();
}

TEST_F(ReportData, CampaignPageHasTheGraphAndThreeChartsPerLink) {
  const std::int64_t run = testing::store_fake_campaign_run(db_path_);
  const json page = page_data({run})["runs"][0];
  EXPECT_EQ(page["header"]["status"], "complete");
  EXPECT_EQ(page["header"]["seed"], 7);
  EXPECT_EQ(page["header"]["nodes"].size(), 2u);
  EXPECT_TRUE(page["header"]["campaign_file"].get<std::string>().find("report-fake") !=
              std::string::npos);
  EXPECT_TRUE(page["missing"].empty()) << page["missing"].dump();
  // The graph laid out by dot: one edge per one-way link, SVG ids by link.
  EXPECT_EQ(page["graph"]["edges"].size(), 2u);
  ASSERT_TRUE(page["graph"]["error"].is_null()) << page["graph"]["error"];
  const std::string svg = page["graph"]["svg"].get<std::string>();
  EXPECT_EQ(svg.rfind("<svg", 0), 0u);
  for (const json& e : page["graph"]["edges"]) {
    EXPECT_NE(svg.find("id=\"link_" + std::to_string(e["link_id"].get<std::int64_t>()) + "\""),
              std::string::npos);
  }
  EXPECT_NE(svg.find(">web</text>"), std::string::npos);  // the host's cluster label
  EXPECT_NE(svg.find(">app:9002</text>"), std::string::npos);
  ASSERT_EQ(page["links"].size(), 2u);
  for (const json& link : page["links"]) {
    EXPECT_EQ(chart_kinds(link["charts"]),
              (std::set<std::string>{"link-series", "link-spectrum", "link-gradients"}));
    const json& series = link["charts"][0]["spec"]["layer"];
    // 64 bins per type, two types; the wave, requested and actual.
    EXPECT_EQ(series[0]["data"]["values"].size(), 128u);
    std::set<std::string> waves;
    for (const json& p : series[1]["data"]["values"]) waves.insert(p["wave"].get<std::string>());
    EXPECT_EQ(waves, (std::set<std::string>{"requested", "actual (Δl)"}));
    // The spectrum marks f_d first, and the training band has a row per bin.
    const json& spectrum = link["charts"][1]["spec"]["layer"];
    EXPECT_EQ(spectrum[2]["data"]["values"][0]["harmonic"], "f_d");
    EXPECT_EQ(spectrum[0]["data"]["values"].size(), 2u * 32u);
  }
  ASSERT_FALSE(page["training"].is_null());
  EXPECT_EQ(page["training"]["bins"], 64);
  EXPECT_EQ(page["training"]["chunks"], 4);
  EXPECT_EQ(page["injections"]["table"]["rows"].size(), 4u);  // adaptive + active per link
  EXPECT_TRUE(page["tail"].is_null());
}

// A simultaneous phase belongs to no single link: each link's section still
// draws the one response series with that link's own wave (its period) and
// marks that link's own frequency in the spectrum.
TEST_F(ReportData, SimultaneousPhaseDrawsEachLinksOwnWave) {
  const std::int64_t run = testing::store_fake_campaign_run(db_path_, 7, true);
  const json page = page_data({run})["runs"][0];
  db::Store store = db::Store::open_read_only(db_path_);
  const auto injections = db::run_injections(store.database(), run);
  const auto gradients = db::run_gradients(store.database(), run);
  ASSERT_EQ(page["links"].size(), 2u);
  std::set<double> periods_ms;
  for (const json& link : page["links"]) {
    ASSERT_EQ(chart_kinds(link["charts"]),
              (std::set<std::string>{"link-series", "link-spectrum", "link-gradients"}))
        << link.dump();
    const std::int64_t phase_id = link["phase_id"].get<std::int64_t>();
    const std::int64_t link_id = link["link_id"].get<std::int64_t>();
    std::optional<std::int64_t> period_ns, k_d;
    for (const auto& i : injections) {
      if (i.injection.phase_id == phase_id && i.injection.link_id == link_id) {
        period_ns = i.injection.period_ns;
      }
    }
    for (const auto& g : gradients) {
      if (g.link.id == link_id) k_d = g.gradient.k_d;
    }
    ASSERT_TRUE(period_ns && k_d) << link["label"];
    // The requested wave's rises are one period of this link's injection apart.
    const json& series = link["charts"][0]["spec"]["layer"];
    std::vector<double> rises;
    for (const json& p : series[1]["data"]["values"]) {
      if (p["wave"] == "requested" && p["delay_ms"].get<double>() > 0) {
        rises.push_back(p["t_ms"].get<double>());
      }
    }
    ASSERT_GE(rises.size(), 3u) << link["label"];
    const double period_ms = rises[2] - rises[1];
    EXPECT_NEAR(period_ms, static_cast<double>(*period_ns) / 1e6, 1e-6) << link["label"];
    periods_ms.insert(std::round(period_ms * 1e3));
    // The spectrum's f_d is the link's own frequency: k_d cycles per window.
    const json& spectrum = link["charts"][1]["spec"]["layer"];
    ASSERT_FALSE(spectrum[2]["data"]["values"].empty()) << link["label"];
    const json& f_d = spectrum[2]["data"]["values"][0];
    EXPECT_EQ(f_d["harmonic"], "f_d");
    const double window_s = static_cast<double>(*period_ns) * static_cast<double>(*k_d) / 1e9;
    EXPECT_NEAR(f_d["f_hz"].get<double>(), static_cast<double>(*k_d) / window_s, 1e-3)
        << link["label"];
  }
  EXPECT_EQ(periods_ms.size(), 2u);  // two links, two waves
}

TEST_F(ReportData, LoadSweepPageHasPercentilesCurveHistogramAndWhereItTurnsNa) {
  const std::int64_t run = testing::store_load_sweep_run(db_path_);
  const json page = page_data({run})["runs"][0];
  const json& tail = page["tail"];
  ASSERT_FALSE(tail.is_null());
  EXPECT_EQ(chart_kinds(tail["charts"]),
            (std::set<std::string>{"tail-percentiles", "tail-load-curve", "tail-histogram"}));
  db::Store store = db::Store::open_read_only(db_path_);
  const auto stored = db::run_tail_results(store.database(), run);
  ASSERT_EQ(tail["results"].size(), stored.size());
  for (std::size_t i = 0; i < stored.size(); ++i) {
    const json& r = tail["results"][i];
    EXPECT_EQ(r["verdict"], stored[i].result.ok ? "ok" : "n/a");
    if (!stored[i].result.ok) continue;
    EXPECT_EQ(r["value_ns"].get<double>(), *stored[i].result.value_ns);
    EXPECT_EQ(r["ci_low_ns"].get<double>(), *stored[i].result.ci_low_ns);
    EXPECT_EQ(r["ci_high_ns"].get<double>(), *stored[i].result.ci_high_ns);
  }
  EXPECT_EQ(tail["turns_na"]["rate_rps"], 4000.0);
  EXPECT_EQ(tail["turns_na"]["reasons"][0], "not iid: lag-1 correlation 0.4");
  EXPECT_EQ(tail["lateness"]["rows"].size(), 2u);
  EXPECT_EQ(tail["lateness"]["rows"][1][3], 12);
}

// Each rate point's self-correcting checks, as stored, with their numbers;
// no note then.
TEST_F(ReportData, LoadSweepPageShowsEveryRatePointsChecksWithTheirNumbers) {
  const std::int64_t run = testing::store_load_sweep_run(db_path_);
  const json tail = page_data({run})["runs"][0]["tail"];
  db::Store store = db::Store::open_read_only(db_path_);
  const auto stored = db::run_load_checks(store.database(), run);
  ASSERT_EQ(stored.size(), 12u);
  ASSERT_EQ(tail["checks"].size(), stored.size());
  for (std::size_t i = 0; i < stored.size(); ++i) {
    const json& c = tail["checks"][i];
    EXPECT_EQ(c["rate_rps"].get<double>(), stored[i].rate_rps);
    EXPECT_EQ(c["check"], stored[i].name);
    EXPECT_EQ(c["outcome"], stored[i].outcome);
    EXPECT_EQ(c["statistic"].get<double>(), *stored[i].statistic);
    EXPECT_EQ(c["threshold"].get<double>(), *stored[i].threshold);
    EXPECT_EQ(c["samples"].get<std::int64_t>(), *stored[i].samples);
    EXPECT_EQ(c["p_value"].is_null(), !stored[i].p_value.has_value());
    EXPECT_EQ(c["detail"], "stored by the test");
  }
  // In rate order, then the controller's: the 4000 rps point fails iid.
  EXPECT_EQ(tail["checks"][0]["rate_rps"], 1000.0);
  EXPECT_EQ(tail["checks"][0]["check"], "rate reached");
  EXPECT_EQ(tail["checks"][9]["rate_rps"], 4000.0);
  EXPECT_EQ(tail["checks"][9]["check"], "iid (lag-1 Spearman)");
  EXPECT_EQ(tail["checks"][9]["outcome"], "fail");
  EXPECT_EQ(tail["checks"][9]["p_value"], 0.0001);
  EXPECT_TRUE(tail["checks_note"].is_null());
}

// A load run stored before the checks were kept: no rows, one line saying so.
TEST_F(ReportData, LoadRunWithoutStoredChecksSaysSoInOneLine) {
  const std::int64_t run = testing::store_load_sweep_run(db_path_, false);
  const json tail = page_data({run})["runs"][0]["tail"];
  EXPECT_TRUE(tail["checks"].empty());
  ASSERT_TRUE(tail["checks_note"].is_string());
  EXPECT_NE(tail["checks_note"].get<std::string>().find("schema version 7"), std::string::npos);
  EXPECT_EQ(tail["results"].size(), 4u);  // the rest of the section as before
}

// The sweep's curve: per percentile, over the achieved load, with its CI as
// a band and the refused point as a rule.
TEST_F(ReportData, LoadSweepCurveDrawsEachPercentileWithItsCiBand) {
  const std::int64_t run = testing::store_load_sweep_run(db_path_);
  const json tail = page_data({run})["runs"][0]["tail"];
  json curve;
  for (const json& c : tail["charts"]) {
    if (c["kind"] == "tail-load-curve") curve = c["spec"];
  }
  ASSERT_FALSE(curve.is_null());
  EXPECT_EQ(curve["layer"][0]["mark"]["type"], "area");
  EXPECT_EQ(curve["layer"][0]["encoding"]["y2"]["field"], "high_us");
  EXPECT_EQ(curve["layer"][1]["encoding"]["color"]["field"], "p");
  std::set<std::string> ps;
  for (const json& v : curve["data"]["values"]) {
    if (v["verdict"] == "ok") ps.insert(v["p"].get<std::string>());
  }
  EXPECT_EQ(ps, (std::set<std::string>{"p50", "p99"}));
}

TEST_F(ReportData, FailedRunSaysWhatIsMissing) {
  const std::int64_t run = testing::store_failed_campaign_run(db_path_);
  const json page = page_data({run})["runs"][0];
  EXPECT_EQ(page["header"]["status"], "failed");
  EXPECT_EQ(page["header"]["error"], "node app: inject.start refused");
  const std::string missing = page["missing"].dump();
  EXPECT_NE(missing.find("no training phase"), std::string::npos) << missing;
  EXPECT_NE(missing.find("no gradients"), std::string::npos) << missing;
  ASSERT_EQ(page["links"].size(), 1u);
  EXPECT_EQ(page["links"][0]["note"], "no active phase stored for this link");
}

TEST_F(ReportData, TwoRunsAreComparedWithDeltasAndCiOverlap) {
  const std::int64_t a = testing::store_fake_campaign_run(db_path_, 7);
  const std::int64_t b = testing::store_fake_campaign_run(db_path_, 8);
  const json data = page_data({a, b});
  ASSERT_EQ(data["runs"].size(), 2u);
  const json& c = data["comparison"];
  EXPECT_EQ(c["a"], a);
  EXPECT_EQ(c["b"], b);
  ASSERT_EQ(c["gradients"].size(), 4u);
  for (const json& g : c["gradients"]) {
    EXPECT_EQ(g["delta"].get<double>(), g["b"].get<double>() - g["a"].get<double>());
    const bool overlap = g["a_ci_low"].get<double>() <= g["b_ci_high"].get<double>() &&
                         g["b_ci_low"].get<double>() <= g["a_ci_high"].get<double>();
    EXPECT_EQ(g["cis_overlap"].get<bool>(), overlap);
  }
  EXPECT_EQ(chart_kinds(c["charts"]), std::set<std::string>{"compare-gradients"});
}

// The first section of a run shaped like `nabla demo`'s: the matrix holds
// the stored gradients with their CIs and the truth, 9 of the 32 checks fail
// and the status line says so instead of just "complete".
TEST_F(ReportData, AnswerLeadsWithTheMatrixAndCountsFailedTruthChecks) {
  const std::int64_t run = testing::store_topology_run(db_path_, testing::demo_shaped_topology());
  const json page = page_data({run})["runs"][0];
  const json& answer = page["answer"];
  EXPECT_EQ(answer["status"], "complete: 9 of 32 truth checks failed");
  EXPECT_EQ(answer["ok"], false);
  EXPECT_EQ(page["header"]["status_line"], answer["status"]);
  const json& matrix = answer["matrix"];
  EXPECT_EQ(matrix["types"], (json{"/auth", "/bid", "/browse", "/view"}));
  ASSERT_EQ(matrix["rows"].size(), 8u);
  db::Store store = db::Store::open_read_only(db_path_);
  std::size_t failed = 0, cells = 0;
  double largest = 0;
  for (const db::GradientRow& g : db::run_gradients(store.database(), run)) {
    for (const json& row : matrix["rows"]) {
      if (row["link_id"] != g.link.id) continue;
      const std::size_t t = static_cast<std::size_t>(
          std::find(matrix["types"].begin(), matrix["types"].end(), g.type) -
          matrix["types"].begin());
      const json& cell = row["cells"][t];
      EXPECT_EQ(cell["value"].get<double>(), g.gradient.value);
      EXPECT_EQ(cell["ci_low"].get<double>(), *g.gradient.ci_low);
      EXPECT_EQ(cell["ci_high"].get<double>(), *g.gradient.ci_high);
      ASSERT_TRUE(cell["truth"].is_number()) << row["link"];
      failed += cell["verdict"] == "fail";
      ++cells;
    }
    largest = std::max(largest, std::abs(g.gradient.value));
  }
  EXPECT_EQ(cells, 32u);
  EXPECT_EQ(failed, 9u);
  EXPECT_EQ(matrix["largest"].get<double>(), largest);
  ASSERT_FALSE(answer["verdicts"].empty());
  EXPECT_EQ(answer["verdicts"][0]["kind"], "truth");
  EXPECT_EQ(answer["verdicts"][0]["details"].size(), 9u);
  // The operating-point shift: per type, the last link's phase moved the
  // responses most (0.8 ms; 0.1 to 0.8 ms, mean 0.45), a note rather than a
  // pass or fail.
  ASSERT_GE(answer["verdicts"].size(), 2u);
  const json& shift = answer["verdicts"][1];
  EXPECT_EQ(shift["kind"], "operating_point");
  EXPECT_TRUE(shift["ok"].is_null());
  ASSERT_EQ(shift["details"].size(), 4u);
  EXPECT_EQ(shift["details"][0],
            "/auth +800 us in tcp db:8083 -> app:0's phase, mean +450 us over 8 phases");
  // The costliest links per type, largest |gradient| first.
  ASSERT_EQ(answer["top_links"].size(), 4u);
  for (const json& t : answer["top_links"]) {
    ASSERT_EQ(t["links"].size(), 3u);
    EXPECT_GE(std::abs(t["links"][0]["value"].get<double>()),
              std::abs(t["links"][1]["value"].get<double>()));
  }
}

TEST_F(ReportData, AnswerOfARunWhoseChecksAllPassSaysComplete) {
  const std::int64_t run = testing::store_topology_run(db_path_, testing::wide_topology());
  const json answer = page_data({run})["runs"][0]["answer"];
  EXPECT_EQ(answer["status"], "complete");
  EXPECT_EQ(answer["ok"], true);
  EXPECT_EQ(answer["verdicts"][0]["ok"], true);
  EXPECT_EQ(answer["matrix"]["rows"].size(), 16u);
  EXPECT_TRUE(answer["warnings"].empty()) << answer["warnings"].dump();
}

// The step oracle's disagreements and a sweep that breaks are verdicts of
// their own, and the status line names both.
TEST_F(ReportData, AnswerCountsStepDisagreementsAndASweepThatBreaks) {
  testing::TopologyRun topology = testing::wide_topology();
  topology.steps = true;
  topology.step_disagreements = 2;
  topology.sweep = true;
  const std::int64_t run = testing::store_topology_run(db_path_, topology);
  const json answer = page_data({run})["runs"][0]["answer"];
  std::map<std::string, json> by_kind;
  for (const json& v : answer["verdicts"]) by_kind[v["kind"].get<std::string>()] = v;
  ASSERT_TRUE(by_kind.count("step")) << answer["verdicts"].dump();
  EXPECT_EQ(by_kind["step"]["ok"], false);
  EXPECT_EQ(by_kind["step"]["text"],
            "the step oracle disagrees with 2 of 48 gradients (disjoint CIs)");
  EXPECT_EQ(by_kind["step"]["details"].size(), 2u);
  ASSERT_TRUE(by_kind.count("linearity")) << answer["verdicts"].dump();
  EXPECT_EQ(by_kind["linearity"]["ok"], false);
  EXPECT_NE(by_kind["linearity"]["text"].get<std::string>().find("breaks at 8"), std::string::npos)
      << by_kind["linearity"]["text"];
  EXPECT_EQ(answer["status"].get<std::string>().rfind("complete: the step oracle disagrees", 0), 0u)
      << answer["status"];
}

TEST_F(ReportData, AnswerWarnsOfANoisyPhaseMeasuredAgain) {
  testing::TopologyRun topology = testing::wide_topology();
  topology.repeated_phase = true;
  const std::int64_t run = testing::store_topology_run(db_path_, topology);
  const json page = page_data({run})["runs"][0];
  const json& answer = page["answer"];
  ASSERT_EQ(answer["warnings"].size(), 1u) << answer["warnings"].dump();
  EXPECT_EQ(answer["warnings"][0],
            "link " + page["answer"]["matrix"]["rows"][0]["link"].get<std::string>() +
                ": measured again 1 time(s): an earlier attempt was too "
                "noisy against the training");
}

TEST_F(ReportData, AnswerWarnsOfLinksThatCouldNotBeMeasured) {
  const std::int64_t run = testing::store_failed_campaign_run(db_path_);
  const json answer = page_data({run})["runs"][0]["answer"];
  EXPECT_EQ(answer["status"], "failed");
  ASSERT_EQ(answer["warnings"].size(), 1u);
  EXPECT_EQ(answer["warnings"][0], "link tcp web/client:0 -> app/tier:9002 could not be measured");
  EXPECT_EQ(answer["matrix"]["rows"][0]["measured"], false);
}

// Without Graphviz's dot the page still has everything else, and its graph
// section says what to install.
TEST_F(ReportData, GraphWithoutDotSaysWhatToInstall) {
  const std::int64_t run = testing::store_fake_campaign_run(db_path_);
  const std::string path = std::getenv("PATH") ? std::getenv("PATH") : "";
  const fs::path empty = fs::path(db_path_ + "-empty-path");
  fs::create_directories(empty);
  ::setenv("PATH", empty.c_str(), 1);
  const json page = page_data({run})["runs"][0];
  ::setenv("PATH", path.c_str(), 1);
  fs::remove_all(empty);
  EXPECT_TRUE(page["graph"]["svg"].is_null());
  EXPECT_EQ(page["graph"]["error"],
            "no link graph: Graphviz's `dot` is not on PATH (Debian: apt-get install graphviz)");
  EXPECT_EQ(page["links"].size(), 2u);
}

// A fault experiment's windows against its SLO, as stored; its failed
// verdict leads the page.
TEST_F(ReportData, ExperimentsShowEveryWindowAgainstTheSloAndLeadWithTheVerdict) {
  const std::int64_t run = testing::store_experiment_run(db_path_);
  const json page = page_data({run})["runs"][0];
  ASSERT_EQ(page["experiments"].size(), 1u);
  const json& e = page["experiments"][0];
  EXPECT_EQ(e["name"], "db-slow");
  EXPECT_EQ(e["verdict"], "fail");
  db::Store store = db::Store::open_read_only(db_path_);
  const auto stored = db::run_experiments(store.database(), run);
  ASSERT_EQ(e["checks"].size(), stored[0].checks.size());
  for (std::size_t i = 0; i < stored[0].checks.size(); ++i) {
    const db::ExperimentCheck& c = stored[0].checks[i];
    EXPECT_EQ(e["checks"][i]["window"], c.window);
    EXPECT_EQ(e["checks"][i]["term"], c.term);
    EXPECT_EQ(e["checks"][i]["bound"].get<double>(), c.bound);
    EXPECT_EQ(e["checks"][i]["value"].get<double>(), c.value);
    EXPECT_EQ(e["checks"][i]["verdict"], c.verdict);
  }
  EXPECT_EQ(page["answer"]["status"], "complete: experiment db-slow: SLO fail");
  const json& v = page["answer"]["verdicts"][0];
  EXPECT_EQ(v["kind"], "experiment");
  EXPECT_EQ(v["ok"], false);
  EXPECT_EQ(v["details"], (json{"fault p99: 23.25 ms against 20 ms"}));
}

// One chart per SLO term: each window's value with its CI bars against the
// bound, in the page's units (ms, %), coloured by the window's verdict.
TEST_F(ReportData, ExperimentChartsEachTermsWindowsAgainstItsBound) {
  const std::int64_t run = testing::store_experiment_run(db_path_);
  const json e = page_data({run})["runs"][0]["experiments"][0];
  ASSERT_EQ(e["charts"].size(), 2u);
  EXPECT_EQ(chart_kinds(e["charts"]), (std::set<std::string>{"experiment-slo"}));
  const json& p99 = e["charts"][0]["spec"];
  EXPECT_NE(e["charts"][0]["title"].get<std::string>().find("p99"), std::string::npos);
  ASSERT_EQ(p99["data"]["values"].size(), 3u);
  const json& fault = p99["data"]["values"][1];
  EXPECT_EQ(fault["window"], "fault");
  EXPECT_EQ(fault["verdict"], "fail");
  EXPECT_DOUBLE_EQ(fault["value"].get<double>(), 23.25);
  EXPECT_DOUBLE_EQ(fault["low"].get<double>(), 23.25 * 0.9);
  EXPECT_DOUBLE_EQ(fault["high"].get<double>(), 23.25 * 1.1);
  EXPECT_DOUBLE_EQ(fault["bound"].get<double>(), 20.0);
  EXPECT_EQ(p99["layer"][2]["encoding"]["x"]["field"], "bound");
  const json& errors = e["charts"][1]["spec"]["data"]["values"];
  EXPECT_DOUBLE_EQ(errors[1]["value"].get<double>(), 0.2);  // 0.002 as percent
  EXPECT_DOUBLE_EQ(errors[1]["bound"].get<double>(), 1.0);
}

TEST_F(ReportData, UnknownRunIsRefusedNamingIt) {
  testing::store_load_sweep_run(db_path_);
  db::Store store = db::Store::open_read_only(db_path_);
  const std::vector<std::int64_t> ids{99};
  try {
    build_report_data(store.database(), ids, {"", "x.db"});
    FAIL() << "no exception";
  } catch (const NoSuchRun& e) {
    EXPECT_STREQ(e.what(), "no run 99 in 'x.db'");
  }
}

TEST(ScriptSafeJson, NoStringCanEndTheScriptElement) {
  const json data{{"note", "</script><script>alert(1)</script><!-- x"}};
  const std::string text = script_safe_json(data);
  EXPECT_EQ(text.find("</"), std::string::npos);
  EXPECT_EQ(text.find("<!"), std::string::npos);
  EXPECT_EQ(json::parse(text), data);
}

}  // namespace
}  // namespace nabla::report
