// `nabla runs` and `nabla sql` on a real database written through db::Store.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <sstream>
#include <string>

#include "nabla/coordinator/csv_series.hh"
#include "nabla/coordinator/runs_command.hh"
#include "nabla/coordinator/sql_command.hh"
#include "nabla/db/reads.hh"
#include "nabla/db/store.hh"

namespace nabla::coordinator {
namespace {

namespace fs = std::filesystem;

class HistoryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("nabla-history-test-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    path_ = (dir_ / "h.db").string();
    db::Store store = db::Store::open(path_, 1'700'000'000'000'000'000);
    db::RunStart start;
    start.kind = db::RunKind::kRun;
    start.config_json = R"({"rate": 1000})";
    start.tool_version = "test";
    start.seed = 7;
    start.started_ns = 1'700'000'000'000'000'000;
    run_ = store.begin_run(start);
    const auto view = store.transaction_type_id("/view");
    const auto bid = store.transaction_type_id("/bid,x");  // a comma: CSV must quote it
    {
      auto writer = store.sample_writer(run_);
      for (int i = 0; i < 1000; ++i) {
        db::Sample s;
        s.send_ns = 1'000'000'000'000 + i * 1'000'000LL;
        s.latency_ns = 5'000'000 + i;
        s.type_id = i % 2 ? bid : view;
        s.source = db::TimestampSource::kSoftware;
        writer.add(s);
      }
      writer.flush();
    }
    db::Link link;
    link.run_id = run_;
    link.proto = "tcp";
    link.src_host = "app";
    link.src_comm = "nabla-tier";
    link.dst_host = "db";
    link.dst_comm = "nabla-tier";
    link.dst_port = 9003;
    db::Gradient g;
    g.run_id = run_;
    g.link_id = link_id_ = store.add_link(link);
    g.type_id = view;
    g.value = 2.98;
    g.ci_low = 2.9;
    g.ci_high = 3.05;
    store.add_gradient(g);
    store.finish_run(run_, db::RunStatus::kComplete, 1'700'000'010'000'000'000, std::nullopt);
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path dir_;
  std::string path_;
  std::int64_t run_ = 0;
  std::int64_t link_id_ = 0;
};

TEST_F(HistoryTest, ListAndShow) {
  const auto rows = runs_list(path_, 10);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0]["status"], "complete");
  EXPECT_EQ(rows[0]["samples"], 1000);
  EXPECT_EQ(rows[0]["gradients"], 1);
  EXPECT_DOUBLE_EQ(rows[0]["duration_s"].get<double>(), 10.0);
  const auto r = runs_show(path_, run_);
  EXPECT_EQ(r["config"]["rate"], 1000);
  EXPECT_EQ(r["seed"], 7);
  ASSERT_EQ(r["gradients"].size(), 1u);
  EXPECT_EQ(r["gradients"][0]["type"], "/view");
  EXPECT_DOUBLE_EQ(r["gradients"][0]["gradient"].get<double>(), 2.98);
  EXPECT_THROW(runs_show(path_, run_ + 1), std::runtime_error);
  EXPECT_THROW(runs_list(path_ + ".missing", 10), std::runtime_error);
  EXPECT_FALSE(fs::exists(path_ + ".missing"));  // never created by reading
}

// Stored messages per transaction come out beside each gradient, in the
// JSON and in the text, with `!` where the gradient is far from the count
// (waits, not hops) and `-` where the run stored none.
TEST_F(HistoryTest, ShowsMessagesPerTransactionAndFlagsWaits) {
  {
    db::Store store = db::Store::open(path_, 1'700'000'000'000'000'000);
    // Two messages per request: a gradient of about 2 is hops, 6 is waits
    // (a timeout).
    auto stored = [&](const char* type, double value, double half_width) {
      db::Gradient g;
      g.run_id = run_;
      g.link_id = link_id_;
      g.type_id = store.transaction_type_id(type);
      g.value = value;
      g.ci_low = value - half_width;
      g.ci_high = value + half_width;
      g.messages_per_txn = 2.0;
      g.messages_ci_low = 1.97;
      g.messages_ci_high = 2.03;
      store.add_gradient(g);
    };
    stored("/bid,x", 2.02, 0.12);
    stored("/search", 6.1, 0.3);
  }
  const auto r = runs_show(path_, run_);
  ASSERT_EQ(r["gradients"].size(), 3u);
  std::map<double, nlohmann::json> by_value;
  for (const auto& g : r["gradients"]) by_value[g["gradient"].get<double>()] = g;
  ASSERT_EQ(by_value.size(), 3u) << r["gradients"].dump();
  const auto& none = by_value.at(2.98);  // the fixture's, stored without messages
  EXPECT_TRUE(none["messages_per_txn"].is_null());
  EXPECT_FALSE(none["waits_not_hops"].get<bool>());
  const auto& hops = by_value.at(2.02);
  EXPECT_DOUBLE_EQ(hops["messages_per_txn"].get<double>(), 2.0);
  EXPECT_DOUBLE_EQ(hops["messages_ci_low"].get<double>(), 1.97);
  EXPECT_DOUBLE_EQ(hops["messages_ci_high"].get<double>(), 2.03);
  EXPECT_FALSE(hops["waits_not_hops"].get<bool>());
  EXPECT_TRUE(by_value.at(6.1)["waits_not_hops"].get<bool>());

  std::ostringstream text;
  print_run(r, text);
  const std::string out = text.str();
  EXPECT_NE(out.find("msgs/txn"), std::string::npos) << out;
  EXPECT_NE(out.find("2 [1.97, 2.03]"), std::string::npos) << out;
  EXPECT_NE(out.find("2 [1.97, 2.03] !"), std::string::npos) << out;
  EXPECT_NE(out.find("! waits, not hops"), std::string::npos) << out;
}

// A run's fault experiments come back in `runs show` with every check,
// the windows in order and the prediction beside the observation.
TEST_F(HistoryTest, ShowListsExperimentsWithTheirChecks) {
  EXPECT_TRUE(runs_show(path_, run_)["experiments"].empty());
  {
    db::Store store = db::Store::open(path_, 1'700'000'000'000'000'000);
    db::Experiment e;
    e.run_id = run_;
    e.name = "db-slow";
    e.links_json = R"(["tcp app -> db:5432"])";
    e.verdict = "fail";
    e.observed_change_ns = 80e6;
    e.predicted_change_ns = 78e6;
    const std::int64_t id = store.add_experiment(e);
    for (const char* window : {"recovery", "baseline", "fault"}) {
      db::ExperimentCheck c;
      c.experiment_id = id;
      c.window = window;
      c.term = "p99";
      c.bound = 20e6;
      c.value = 25e6;
      c.verdict = std::string(window) == "fault" ? "fail" : "pass";
      store.add_experiment_check(c);
    }
  }
  const auto r = runs_show(path_, run_);
  ASSERT_EQ(r["experiments"].size(), 1u);
  const auto& e = r["experiments"][0];
  EXPECT_EQ(e["verdict"], "fail");
  EXPECT_EQ(e["links"][0], "tcp app -> db:5432");
  EXPECT_DOUBLE_EQ(e["predicted_change_ns"].get<double>(), 78e6);
  ASSERT_EQ(e["checks"].size(), 3u);
  EXPECT_EQ(e["checks"][0]["window"], "baseline");
  EXPECT_EQ(e["checks"][1]["verdict"], "fail");
  EXPECT_TRUE(e["checks"][2]["extra_ns"].is_null());
}

// The CSV export is exactly what `nabla analyze` reads back.
// A swept gradient with a step: the JSON carries the curve, its verdict and
// the step; the text shows a step column, the curve and the verdict.
TEST_F(HistoryTest, ShowCarriesTheSweepAndTheStep) {
  {
    db::Store store = db::Store::open(path_, 1'700'000'000'000'000'000);
    db::Gradient g;
    g.run_id = run_;
    g.link_id = db::run_gradients(store.database(), run_)[0].gradient.link_id;
    g.type_id = store.transaction_type_id("/bid,x");
    g.value = 1.5;
    g.ci_low = 1.4;
    g.ci_high = 1.6;
    g.step_value = 1.9;
    g.step_ci_low = 1.7;
    g.step_ci_high = 2.1;
    const std::int64_t id = store.add_gradient(g);
    const double curve[][2] = {{1'000'000, 1.0}, {4'000'000, 1.5}, {16'000'000, 1.9}};
    for (const auto& [amplitude, value] : curve) {
      store.add_gradient_amplitude({run_, id, std::nullopt, static_cast<std::int64_t>(amplitude),
                                    0.8 * amplitude, value, value - 0.05, value + 0.05});
    }
  }
  const auto r = runs_show(path_, run_);
  ASSERT_EQ(r["gradients"].size(), 2u);
  const auto& swept = r["gradients"][0];  // "/bid,x" sorts first
  EXPECT_EQ(swept["type"], "/bid,x");
  ASSERT_EQ(swept["amplitudes"].size(), 3u);
  EXPECT_EQ(swept["amplitudes"][2]["amplitude_ns"], 16'000'000);
  EXPECT_DOUBLE_EQ(swept["amplitudes"][2]["actual_amplitude_ns"].get<double>(), 12.8e6);
  EXPECT_EQ(swept["linearity"]["verdict"], "breaks");
  EXPECT_EQ(swept["linearity"]["breaks_at_ns"], 4e6);
  EXPECT_EQ(swept["linearity"]["text"], "breaks at 4 ms (outside 0.90..1.10)");
  EXPECT_DOUBLE_EQ(swept["step"]["gradient"].get<double>(), 1.9);
  EXPECT_EQ(swept["step"]["disagrees"], true);  // [1.7, 2.1] vs [1.4, 1.6]
  const auto& plain = r["gradients"][1];
  EXPECT_TRUE(plain["step"].is_null());
  EXPECT_TRUE(plain["amplitudes"].empty());
  EXPECT_TRUE(plain["linearity"].is_null());
  std::ostringstream text;
  print_run(r, text);
  EXPECT_NE(text.str().find("1.9 [1.7, 2.1] disagrees"), std::string::npos) << text.str();
  EXPECT_NE(text.str().find("sweep (gradient per amplitude)"), std::string::npos) << text.str();
  EXPECT_NE(text.str().find("/bid,x: breaks at 4 ms"), std::string::npos) << text.str();
}

TEST_F(HistoryTest, CsvExportRoundTripsThroughAnalyzeInput) {
  std::ostringstream out;
  runs_export(path_, run_, OutputFormat::kCsv, out);
  const CsvSeries s = parse_csv_series(out.str(), "export");
  ASSERT_EQ(s.size(), 1000u);
  EXPECT_EQ(s.t_ns[999], 1'000'000'000'000 + 999 * 1'000'000LL);
  EXPECT_EQ(s.latency_ns[3], 5'000'003);
  ASSERT_EQ(s.type_names.size(), 2u);
  EXPECT_EQ(s.type_names[1], "/bid,x");  // quoted on export, unquoted on read
}

TEST_F(HistoryTest, JsonExportHasEverySampleField) {
  std::ostringstream out;
  runs_export(path_, run_, OutputFormat::kJson, out);
  const auto doc = nlohmann::json::parse(out.str());
  ASSERT_EQ(doc["samples"].size(), 1000u);
  EXPECT_EQ(doc["samples"][1]["type"], "/bid,x");
  EXPECT_EQ(doc["samples"][0]["timestamp_source"], "software");
  EXPECT_TRUE(doc["samples"][0]["service_ns"].is_null());
}

TEST_F(HistoryTest, SqlIsReadOnlyAndFormats) {
  std::ostringstream csv;
  sql_query(path_, "SELECT name FROM transaction_types ORDER BY name", OutputFormat::kCsv, csv);
  EXPECT_EQ(csv.str(), "name\n\"/bid,x\"\n/view\n");
  std::ostringstream json_out;
  sql_query(path_, "SELECT count(*) AS n FROM samples", OutputFormat::kJson, json_out);
  EXPECT_EQ(nlohmann::json::parse(json_out.str())[0]["n"], 1000);
  std::ostringstream ignored;
  EXPECT_ANY_THROW(sql_query(path_, "DELETE FROM samples", OutputFormat::kTable, ignored));
  EXPECT_ANY_THROW(sql_query(path_, "SELEC 1", OutputFormat::kTable, ignored));
  EXPECT_EQ(runs_list(path_, 1)[0]["samples"], 1000);  // nothing was deleted
}

}  // namespace
}  // namespace nabla::coordinator
