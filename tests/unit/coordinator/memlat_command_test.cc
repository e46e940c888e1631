// `nabla memlat` as a user runs it: exit 3 with one line naming the reason
// where counters cannot be had, replay of a recording recomputing exactly,
// the probe's JSON, and usage errors (exit 2).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "nabla/common/netns.hh"
#include "nabla/memlat/recording.hh"

namespace {

namespace fs = std::filesystem;
using nabla::common::CommandResult;
using nlohmann::json;

CommandResult nabla(std::vector<std::string> args) {
  args.insert(args.begin(), NABLA_BINARY);
  return nabla::common::run_command(args);
}

bool one_line(const std::string& text) {
  const auto newline = text.find('\n');
  return !text.empty() && (newline == std::string::npos || newline + 1 == text.size());
}

TEST(MemlatCommand, WithoutCountersExits3WithTheReason) {
  const CommandResult r = nabla({"memlat", "--for", "1s", "--interval", "1s"});
  if (!fs::exists("/sys/bus/event_source/devices/cpu")) {
    EXPECT_EQ(r.exit_code, 3) << r.stderr_text;
    EXPECT_EQ(r.stderr_text.rfind("nabla memlat: counters unavailable: no PMU exposed", 0), 0u)
        << r.stderr_text;
  } else if (r.exit_code == 3) {
    EXPECT_EQ(r.stderr_text.rfind("nabla memlat: counters unavailable: ", 0), 0u) << r.stderr_text;
  } else {
    EXPECT_EQ(r.exit_code, 0) << r.stderr_text;
  }
  if (r.exit_code == 3) {
    EXPECT_TRUE(one_line(r.stderr_text)) << r.stderr_text;
  }
}

TEST(MemlatCommand, ReplayRecomputesTheRecordingExactly) {
  nabla::memlat::Recording rec;
  rec.microarch = "Intel Skylake-SP / Cascade Lake-SP";
  rec.constants = {44, 2.1, 1};
  // idle/remote of the paper's Table 2: 144.46 ns.
  rec.samples.push_back({1'000'000'000, 2.0e9, 2.0e9, (144.46 * 2.1 - 44) * 5e5, 5e5});
  rec.samples.push_back({1'000'000'000, 2.0e9, 2.0e9, 0, 0});
  const fs::path path =
      fs::temp_directory_path() / ("nabla-memlat-cli-" + std::to_string(::getpid()) + ".json");
  nabla::memlat::save_recording(rec, path.string());
  const CommandResult r = nabla({"memlat", "--replay", path.string(), "--json"});
  const CommandResult text = nabla({"memlat", "--replay", path.string()});
  fs::remove(path);
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  EXPECT_EQ(json::parse(r.stdout_text), nabla::memlat::report_json(rec));
  EXPECT_NEAR(json::parse(r.stdout_text)["mean_latency_ns"].get<double>(), 144.46, 1e-9);
  ASSERT_EQ(text.exit_code, 0) << text.stderr_text;
  EXPECT_NE(text.stdout_text.find("mean memory latency: 144.5 ns"), std::string::npos)
      << text.stdout_text;
}

TEST(MemlatCommand, ProbeListsPointsPerSizeAndLoad) {
  const CommandResult r = nabla(
      {"memlat", "--probe", "--sizes", "16384", "--loads", "100000", "--load", "1", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  const json points = json::parse(r.stdout_text)["points"];
  ASSERT_EQ(points.size(), 2u);
  EXPECT_EQ(points[0]["buffer_bytes"], 16384);
  EXPECT_EQ(points[0]["load_threads"], 0);
  EXPECT_EQ(points[1]["load_threads"], 1);
  EXPECT_GT(points[0]["latency_ns"].get<double>(), 0);
}

TEST(MemlatCommand, UsageErrorsNameTheFlag) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--interval", "0s"}, "--interval"},
      {{"--for", "soon"}, "--for"},
      {{"--pid", "-3"}, "--pid"},
      {{"--pid", "1", "--system"}, "--pid, --cgroup and --system"},
      {{"--probe", "--load", "-1"}, "--load"},
      {{"--replay", "/nonexistent/rec.json"}, "--replay"},
      {{"--cas-ns", "-1"}, "--cas-ns"},
      {{"--probe", "--sizes", "0"}, "--sizes"},
  };
  for (const auto& [args, flag] : cases) {
    std::vector<std::string> argv{"memlat"};
    argv.insert(argv.end(), args.begin(), args.end());
    const CommandResult r = nabla(argv);
    EXPECT_EQ(r.exit_code, 2) << flag << ": " << r.stderr_text;
    EXPECT_EQ(r.stderr_text.rfind("nabla memlat: " + flag, 0), 0u) << r.stderr_text;
    EXPECT_TRUE(one_line(r.stderr_text)) << r.stderr_text;
  }
}

// `nabla load --memlat` opens the counters before anything runs or is
// stored: without them it exits 3 naming the reason; its flags are checked
// like every other load flag.
TEST(MemlatCommand, LoadMemlatNeedsCountersBeforeItStarts) {
  const fs::path db =
      fs::temp_directory_path() / ("nabla-load-memlat-" + std::to_string(::getpid()) + ".db");
  const CommandResult r = nabla({"load", "--memlat", "--target", "echo://127.0.0.1:9", "--rate",
                                 "100", "--max-duration", "1s", "--db", db.string()});
  if (!fs::exists("/sys/bus/event_source/devices/cpu")) {
    EXPECT_EQ(r.exit_code, 3) << r.stderr_text;
    EXPECT_EQ(r.stderr_text.rfind("nabla load: --memlat: counters unavailable: no PMU exposed", 0),
              0u)
        << r.stderr_text;
    EXPECT_TRUE(one_line(r.stderr_text)) << r.stderr_text;
    EXPECT_FALSE(fs::exists(db));  // nothing stored
  }
  fs::remove(db);
  for (const auto& [args, flag] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"--memlat-pid", "5"}, "--memlat-pid"},
           {{"--memlat-interval", "2s"}, "--memlat-interval"},
           {{"--memlat", "--memlat-interval", "0s"}, "--memlat-interval"},
       }) {
    std::vector<std::string> argv{"load", "--target", "echo://127.0.0.1:9", "--rate", "100"};
    argv.insert(argv.end(), args.begin(), args.end());
    const CommandResult bad = nabla(argv);
    EXPECT_EQ(bad.exit_code, 2) << flag << ": " << bad.stderr_text;
    EXPECT_EQ(bad.stderr_text.rfind("nabla load: " + flag, 0), 0u) << bad.stderr_text;
  }
}

// `--db` keeps what the command printed as a run of kind memlat: a replayed
// recording's intervals with both estimates (core and memory controller),
// and the probe's points; `nabla runs show` gives them back.
TEST(MemlatCommand, DbStoresIntervalsAndProbePointsAsMemlatRuns) {
  const fs::path dir =
      fs::temp_directory_path() / ("nabla-memlat-db-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string db = (dir / "runs.db").string();
  nabla::memlat::Recording rec;
  rec.microarch = "Intel Skylake-SP / Cascade Lake-SP";
  rec.target = "pid 42";
  rec.constants = {44, 2.1, 1};
  rec.constants.cas_ns = 14;
  rec.samples.push_back({1'000'000'000, 2.0e9, 2.0e9, (144.46 * 2.1 - 44) * 5e5, 5e5});
  // 15 entries waiting per insert at 1.2 GHz: 12.5 ns, + t_CAS 14 ns.
  rec.samples.back().imc = nabla::memlat::ImcCounts{1.5e7, 1e6, 1.2e9};
  rec.samples.push_back({1'000'000'000, 2.0e9, 2.0e9, 0, 0});
  const std::string path = (dir / "rec.json").string();
  nabla::memlat::save_recording(rec, path);
  const CommandResult replay = nabla({"memlat", "--replay", path, "--db", db, "--json"});
  const CommandResult probe =
      nabla({"memlat", "--probe", "--sizes", "16384", "--loads", "100000", "--db", db, "--json"});
  const json list = json::parse(nabla({"runs", "list", "--db", db, "--json"}).stdout_text);
  const CommandResult shown_replay = nabla({"runs", "show", "1", "--db", db, "--json"});
  const CommandResult shown_probe = nabla({"runs", "show", "2", "--db", db, "--json"});
  const CommandResult text = nabla({"runs", "show", "1", "--db", db});
  fs::remove_all(dir);

  ASSERT_EQ(replay.exit_code, 0) << replay.stderr_text;
  ASSERT_EQ(probe.exit_code, 0) << probe.stderr_text;
  EXPECT_NEAR(json::parse(replay.stdout_text)["mean_imc_latency_ns"].get<double>(), 26.5, 1e-9);
  ASSERT_EQ(list.size(), 2u);
  EXPECT_EQ(list[0]["kind"], "memlat");
  EXPECT_EQ(list[1]["kind"], "memlat");
  const json intervals = json::parse(shown_replay.stdout_text)["memlat"]["intervals"];
  ASSERT_EQ(intervals.size(), 2u);
  EXPECT_EQ(intervals[0]["latency_ns"],
            json::parse(replay.stdout_text)["samples"][0]["latency_ns"]);
  EXPECT_NEAR(intervals[0]["imc_latency_ns"].get<double>(), 26.5, 1e-9);
  EXPECT_EQ(intervals[0]["target"], "pid 42");
  EXPECT_TRUE(intervals[1]["latency_ns"].is_null());
  EXPECT_LT(intervals[0]["t_ns"].get<std::int64_t>(), intervals[1]["t_ns"].get<std::int64_t>());
  const json stored_probe = json::parse(shown_probe.stdout_text);
  const json printed_points = json::parse(probe.stdout_text)["points"];
  ASSERT_EQ(stored_probe["memlat"]["probe"].size(), printed_points.size());
  EXPECT_EQ(stored_probe["memlat"]["probe"][0]["latency_ns"], printed_points[0]["latency_ns"]);
  EXPECT_EQ(stored_probe["seed"], 1);
  EXPECT_NE(text.stdout_text.find("26.5 ns (memory controllers)"), std::string::npos)
      << text.stdout_text;
}

}  // namespace
