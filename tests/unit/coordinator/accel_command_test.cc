// `nabla accel` as a user runs it: the model from flags, from a parameter
// file and from a stored load run, the link-gradient projection of a remote
// offload, and bad input (exit 2, one line naming the parameter). The stored
// runs are written through db::Store with numbers worked out by hand below.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "nabla/common/netns.hh"
#include "nabla/db/store.hh"

namespace {

namespace fs = std::filesystem;
using nabla::common::CommandResult;
using nlohmann::json;
constexpr std::int64_t kStart = 1'700'000'000'000'000'000;

CommandResult nabla(std::vector<std::string> args) {
  args.insert(args.begin(), NABLA_BINARY);
  return nabla::common::run_command(args);
}

class AccelCommand : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/nabla-accel-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    db_ = (dir_ / "runs.db").string();
    nabla::db::Store store = nabla::db::Store::open(db_, kStart);
    load_run_ = add_load_run(store);
    gradient_run_ = add_gradient_run(store);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Service times 10 and 20 us (mean 15 us); throughputs 1500 and 2000 req/s
  // at two rate points (the higher counts).
  static std::int64_t add_load_run(nabla::db::Store& store) {
    nabla::db::RunStart start;
    start.kind = nabla::db::RunKind::kLoad;
    start.tool_version = "test";
    start.started_ns = kStart;
    const std::int64_t run = store.begin_run(start);
    const auto type = store.transaction_type_id("get");
    {
      auto writer = store.sample_writer(run);
      for (std::int64_t service : {10'000, 20'000}) {
        nabla::db::Sample s;
        s.send_ns = kStart;
        s.latency_ns = 50'000;
        s.service_ns = service;
        s.type_id = type;
        writer.add(s);
      }
      writer.flush();
    }
    for (double throughput : {1500.0, 2000.0}) {
      nabla::db::TailResult t;
      t.run_id = run;
      t.rate_rps = throughput;
      t.throughput_rps = throughput;
      t.value_ns = 60'000;
      store.add_tail_result(t);
    }
    store.finish_run(run, nabla::db::RunStatus::kComplete, kStart + 10);
    return run;
  }

  // One link web -> app with gradient 2 (CI 1.8 .. 2.2) for /view, whose
  // training response times are 10, 12, 14, 16 ms (mean 13 ms).
  static std::int64_t add_gradient_run(nabla::db::Store& store) {
    nabla::db::RunStart start;
    start.kind = nabla::db::RunKind::kRun;
    start.tool_version = "test";
    start.started_ns = kStart + 100;
    const std::int64_t run = store.begin_run(start);
    const auto view = store.transaction_type_id("/view");
    nabla::db::Link l;
    l.run_id = run;
    l.src_host = "web";
    l.dst_host = "app";
    l.dst_port = 9002;
    const auto link = store.add_link(l);
    nabla::db::Phase training;
    training.run_id = run;
    training.kind = nabla::db::PhaseKind::kTraining;
    training.started_ns = start.started_ns;
    const auto phase = store.add_phase(training);
    {
      auto writer = store.sample_writer(run);
      for (double ms : {10.0, 12.0, 14.0, 16.0}) {
        nabla::db::Sample s;
        s.phase_id = phase;
        s.send_ns = start.started_ns;
        s.latency_ns = static_cast<std::int64_t>(ms * 1e6);
        s.type_id = view;
        writer.add(s);
      }
      writer.flush();
    }
    nabla::db::Gradient g;
    g.run_id = run;
    g.link_id = link;
    g.type_id = view;
    g.value = 2.0;
    g.ci_low = 1.8;
    g.ci_high = 2.2;
    store.add_gradient(g);
    store.finish_run(run, nabla::db::RunStatus::kComplete, start.started_ns + 10);
    return run;
  }

  fs::path dir_;
  std::string db_;
  std::int64_t load_run_ = 0, gradient_run_ = 0;
};

TEST_F(AccelCommand, FlagsGiveSpeedupAndLatencyReductionWithInputsEchoed) {
  const CommandResult r =
      nabla({"accel", "--cycles", "2.0e9", "--alpha", "0.165844", "--offloads-per-s", "298951",
             "--o0", "10", "--L", "3", "--accel-factor", "6", "--design", "sync", "--strategy",
             "on-chip", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  const json out = json::parse(r.stdout_text);
  const double expected = 1 / (1 - 0.165844 + 0.165844 / 6 + 298951 / 2.0e9 * 13);
  EXPECT_DOUBLE_EQ(out["speedup"].get<double>(), expected);
  EXPECT_DOUBLE_EQ(out["latency_reduction"].get<double>(), expected);
  EXPECT_EQ(out["inputs"]["o0"], 10.0);
  EXPECT_EQ(out["design"], "sync");
}

TEST_F(AccelCommand, FromRunTakesCAndNFromTheLoadRun) {
  // C = 2000 req/s * 15000 ns * 2 GHz = 6e7; n = 2000 * 2 = 4000 per second.
  const CommandResult r = nabla({"accel", "--from-run", std::to_string(load_run_), "--db", db_,
                                 "--host-ghz", "2", "--offloads-per-request", "2", "--alpha", "0.5",
                                 "--o0", "1000", "--design", "async", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  const json out = json::parse(r.stdout_text);
  EXPECT_DOUBLE_EQ(out["inputs"]["cycles"].get<double>(), 6e7);
  EXPECT_DOUBLE_EQ(out["inputs"]["offloads_per_s"].get<double>(), 4000);
  EXPECT_DOUBLE_EQ(out["from_run"]["mean_service_ns"].get<double>(), 15000);
  EXPECT_DOUBLE_EQ(out["speedup"].get<double>(), 1 / (0.5 + 4000 / 6e7 * 1000));
}

TEST_F(AccelCommand, RemoteLinkProjectsResponseTimeWithTheGradient) {
  // Two offloads per request across web->app at 250 us one way: +500 us on
  // the link, 2 x 500 us = +1 ms on /view's 13 ms.
  const CommandResult r = nabla({"accel",
                                 "--cycles",
                                 "1e9",
                                 "--alpha",
                                 "0.3",
                                 "--offloads-per-s",
                                 "100",
                                 "--design",
                                 "async-distinct",
                                 "--strategy",
                                 "remote",
                                 "--o1",
                                 "5000",
                                 "--host-ghz",
                                 "2",
                                 "--link",
                                 "web->app",
                                 "--link-latency",
                                 "250us",
                                 "--offloads-per-request",
                                 "2",
                                 "--gradient-run",
                                 std::to_string(gradient_run_),
                                 "--db",
                                 db_,
                                 "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  const json out = json::parse(r.stdout_text);
  EXPECT_DOUBLE_EQ(out["inputs"]["L"].get<double>(), 250'000.0 * 2);             // cycles at 2 GHz
  EXPECT_DOUBLE_EQ(out["speedup"].get<double>(), 1 / (0.7 + 100 / 1e9 * 5000));  // L not paid
  const json& view = out["link_projection"]["predictions"][0];
  EXPECT_EQ(view["type"], "/view");
  EXPECT_NEAR(view["predicted_ns"].get<double>(), 14e6, 1);
  EXPECT_LT(view["ci_low_ns"].get<double>(), 14e6);
  EXPECT_GT(view["ci_high_ns"].get<double>(), 14e6);
  const CommandResult text =
      nabla({"accel", "--cycles", "1e9", "--alpha", "0.3", "--design", "async", "--strategy",
             "remote", "--host-ghz", "2", "--link", "web->app", "--link-latency", "250us",
             "--gradient-run", std::to_string(gradient_run_), "--db", db_});
  ASSERT_EQ(text.exit_code, 0) << text.stderr_text;
  EXPECT_NE(text.stdout_text.find("speedup C/C_S"), std::string::npos) << text.stdout_text;
  EXPECT_NE(text.stdout_text.find("/view"), std::string::npos) << text.stdout_text;
}

// examples/accel.toml: one kernel, two strategies, all four designs.
TEST_F(AccelCommand, ConfigPrintsEveryDesignAndStrategy) {
  const std::string path = NABLA_EXAMPLES_DIR "/accel.toml";
  const CommandResult r = nabla({"accel", "--config", path, "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  EXPECT_EQ(json::parse(r.stdout_text)["rows"].size(), 8u);  // 2 strategies x 4 designs
  const CommandResult text = nabla({"accel", "--config", path});
  ASSERT_EQ(text.exit_code, 0) << text.stderr_text;
  EXPECT_NE(text.stdout_text.find(">= 425 B"), std::string::npos) << text.stdout_text;
}

TEST_F(AccelCommand, BadInputIsOneLineNamingTheParameterAndExit2) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--cycles", "1e9", "--alpha", "1.5", "--design", "async"}, "--alpha"},
      {{"--cycles", "1e9", "--alpha", "-0.5", "--design", "async"}, "--alpha"},
      {{"--cycles", "1e9", "--alpha", "0.5", "--offloads-per-s", "-3", "--design", "async"},
       "--offloads-per-s"},
      {{"--cycles", "1e9", "--alpha", "0.5", "--design", "blocking"}, "--design"},
      {{"--cycles", "1e9", "--alpha", "0.5", "--strategy", "cloud"}, "--strategy"},
      {{"--cycles", "1e9", "--alpha", "0.5", "--design", "sync"}, "--accel-factor"},
      {{"--from-run", "1", "--alpha", "0.5", "--design", "async"}, "--host-ghz"},
      {{"--cycles", "1e9", "--alpha", "0.5", "--link", "a->b", "--strategy", "on-chip"}, "--link"},
      {{"--cycles", "1e9", "--alpha", "0.5", "--design", "async", "--offloads-per-request", "-1"},
       "--offloads-per-request"},
      {{"--cycles", "1e9", "--alpha", "0.5", "--design", "async", "--confidence", "2"},
       "--confidence"},
      {{"--cycles", "1e9", "--alpha", "0.5", "--design", "async", "--strategy", "remote", "--link",
        "a->b", "--link-latency", "soon", "--gradient-run", "1", "--host-ghz", "2"},
       "--link-latency"},
  };
  for (const auto& [args, flag] : cases) {
    std::vector<std::string> argv{"accel"};
    argv.insert(argv.end(), args.begin(), args.end());
    const CommandResult r = nabla(argv);
    EXPECT_EQ(r.exit_code, 2) << flag;
    EXPECT_EQ(r.stderr_text.rfind("nabla accel: " + flag + ":", 0), 0u) << r.stderr_text;
    const auto newline = r.stderr_text.find('\n');
    EXPECT_TRUE(newline == std::string::npos || newline + 1 == r.stderr_text.size())
        << r.stderr_text;
  }
}

// What the command printed is what the run history keeps: with --db, or
// when it reads a stored run, the evaluation becomes a run of kind accel
// with its model row and its link projection, listed and shown by
// `nabla runs`.
// The words of a command line written as one string.
std::vector<std::string> words(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

TEST_F(AccelCommand, StoredAsAnAccelRunThatRunsListsAndShows) {
  std::vector<std::string> args = words(
      "accel --cycles 2e9 --alpha 0.2 --accel-factor 4 --offloads-per-s 50 --design sync-os "
      "--strategy remote --o0 100 --host-ghz 2 --link web->app --link-latency 100us --json");
  for (const std::string& w :
       {std::string("--gradient-run"), std::to_string(gradient_run_), std::string("--db"), db_}) {
    args.push_back(w);
  }
  const CommandResult r = nabla(args);
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  const json printed = json::parse(r.stdout_text);
  const json list = json::parse(nabla({"runs", "list", "--db", db_, "--json"}).stdout_text);
  ASSERT_EQ(list.size(), 3u);  // the load run, the gradient run and this one
  EXPECT_EQ(list[0]["kind"], "accel");
  EXPECT_EQ(list[0]["status"], "complete");
  EXPECT_NE(r.stderr_text.find("stored as run " + list[0]["run_id"].dump()), std::string::npos)
      << r.stderr_text;
  const CommandResult show =
      nabla({"runs", "show", list[0]["run_id"].dump(), "--db", db_, "--json"});
  ASSERT_EQ(show.exit_code, 0) << show.stderr_text;
  const json stored = json::parse(show.stdout_text);
  EXPECT_EQ(stored["config"]["design"], "sync-os");
  EXPECT_EQ(stored["config"]["gradient_run"], gradient_run_);
  const json& row = stored["accel"]["results"].at(0);
  EXPECT_EQ(row["speedup"], printed["speedup"]);
  EXPECT_EQ(row["L"], printed["inputs"]["L"]);
  EXPECT_EQ(row["strategy"], "remote");
  EXPECT_TRUE(row["kernel"].is_null());
  const json& projected = stored["accel"]["projections"].at(0);
  const json& view = printed["link_projection"]["predictions"][0];
  EXPECT_EQ(projected["type"], "/view");
  EXPECT_EQ(projected["link"], "web->app");
  EXPECT_EQ(projected["added_delay_ns"], 100'000.0);
  EXPECT_EQ(projected["predicted_ns"], view["predicted_ns"]);
  EXPECT_EQ(projected["ci_low_ns"], view["ci_low_ns"]);
  EXPECT_EQ(projected["ci_high_ns"], view["ci_high_ns"]);
  const CommandResult text = nabla({"runs", "show", list[0]["run_id"].dump(), "--db", db_});
  EXPECT_NE(text.stdout_text.find("sync-os"), std::string::npos) << text.stdout_text;
  EXPECT_NE(text.stdout_text.find("/view"), std::string::npos) << text.stdout_text;
}

TEST_F(AccelCommand, ConfigWithDbStoresEveryRowAndFlagsAloneStoreNothing) {
  const CommandResult r =
      nabla({"accel", "--config", NABLA_EXAMPLES_DIR "/accel.toml", "--db", db_, "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  const json list = json::parse(nabla({"runs", "list", "--db", db_, "--json"}).stdout_text);
  ASSERT_EQ(list.size(), 3u);
  const json stored = json::parse(
      nabla({"runs", "show", list[0]["run_id"].dump(), "--db", db_, "--json"}).stdout_text);
  const json& rows = stored["accel"]["results"];
  const json printed = json::parse(r.stdout_text)["rows"];
  ASSERT_EQ(rows.size(), printed.size());
  for (std::size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(rows[i]["kernel"], printed[i]["kernel"]);
    EXPECT_EQ(rows[i]["design"], printed[i]["design"]);
    EXPECT_EQ(rows[i]["speedup"], printed[i]["speedup"]);
    EXPECT_EQ(rows[i]["min_bytes_speedup"], printed[i]["min_bytes_speedup"]);
  }
  EXPECT_EQ(stored["config"]["mode"], "config");
  // Without --db and without a stored input, nothing is written anywhere.
  const CommandResult alone = nabla({"accel", "--cycles", "1e9", "--alpha", "0.3", "--design",
                                     "async", "--offloads-per-s", "10"});
  ASSERT_EQ(alone.exit_code, 0) << alone.stderr_text;
  EXPECT_EQ(alone.stderr_text.find("stored as run"), std::string::npos) << alone.stderr_text;
}

}  // namespace
