// A recording saved and replayed recomputes every estimate bit for bit.
#include "nabla/memlat/recording.hh"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace nabla::memlat {
namespace {

namespace fs = std::filesystem;

Recording table2_run() {
  Recording r;
  r.microarch = "Intel Skylake-SP / Cascade Lake-SP";
  r.constants = {44, 2.1, 1};
  // idle/local and loaded from Table 2, an interval at 2.6 GHz, an idle one.
  for (auto [ghz, memory_cycles, requests] : {std::tuple{2.1, 137.251, 1234567.0},
                                              {2.1, 225.157, 7654321.0},
                                              {2.6, 156.9, 3e6},
                                              {2.1, 0.0, 0.0}}) {
    CounterSample s;
    s.interval_ns = 1'000'000'000;
    s.ref_cycles = 2.1e9 * 0.97;
    s.cycles = ghz * 1e9 * 0.97;
    s.requests = requests;
    s.outstanding = std::round(memory_cycles * requests);
    r.samples.push_back(s);
  }
  return r;
}

TEST(MemlatRecording, ReplayRecomputesExactly) {
  const fs::path path =
      fs::temp_directory_path() / ("nabla-memlat-rec-" + std::to_string(::getpid()) + ".json");
  const Recording original = table2_run();
  save_recording(original, path.string());
  const Recording replayed = load_recording(path.string());
  fs::remove(path);
  const nlohmann::json a = report_json(original), b = report_json(replayed);
  EXPECT_EQ(a, b);
  ASSERT_EQ(b["samples"].size(), 4u);
  EXPECT_TRUE(b["samples"][3]["latency_ns"].is_null());
  EXPECT_NEAR(b["samples"][0]["latency_ns"].get<double>(), 86.31, 1e-6);
  EXPECT_EQ(a["mean_latency_ns"].get<double>(), b["mean_latency_ns"].get<double>());
}

TEST(MemlatRecording, BadFilesNameWhatIsWrong) {
  EXPECT_THROW(parse_recording(nlohmann::json{{"format", "other"}}), std::invalid_argument);
  nlohmann::json doc = report_json(table2_run());
  doc["samples"][1].erase("requests");
  try {
    parse_recording(doc);
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()).rfind("samples[1].requests", 0), 0u) << e.what();
  }
}

// The memory controllers' counts and t_CAS travel with the recording, so a
// replay recomputes the controller-side figure too; a recording without
// them (an older file, or a machine without an iMC PMU) replays as before.
TEST(MemlatRecording, ImcCountsAndCasReplayExactly) {
  Recording original = table2_run();
  original.target = "cgroup /sys/fs/cgroup/web";
  original.imc_microarch = "Intel Skylake-SP / Cascade Lake-SP";
  original.constants.cas_ns = 13.75;
  original.samples[0].imc = ImcCounts{1.7e7, 1.1e6, 1.333e9};
  original.samples[1].imc = ImcCounts{9.1e7, 7.3e6, 1.333e9};
  const Recording replayed = parse_recording(nlohmann::json::parse(report_json(original).dump()));
  EXPECT_EQ(report_json(original), report_json(replayed));
  EXPECT_EQ(replayed.target, original.target);
  EXPECT_EQ(replayed.constants.cas_ns, 13.75);
  ASSERT_TRUE(replayed.samples[1].imc.has_value());
  EXPECT_FALSE(replayed.samples[2].imc.has_value());
  const nlohmann::json report = report_json(replayed);
  EXPECT_DOUBLE_EQ(report["samples"][0]["imc"]["latency_ns"].get<double>(),
                   1.7e7 / 1.1e6 / 1.333 + 13.75);
  EXPECT_FALSE(report["samples"][2].contains("imc"));

  nlohmann::json older = report_json(table2_run());
  older.erase("target");
  older["constants"].erase("cas_ns");
  const Recording old = parse_recording(older);
  EXPECT_EQ(old.constants.cas_ns, EstimatorConstants{}.cas_ns);
  EXPECT_FALSE(report_json(old).contains("mean_imc_latency_ns"));

  nlohmann::json bad = report_json(original);
  bad["samples"][0]["imc"]["rpq_inserts"] = -1;
  EXPECT_THROW(parse_recording(bad), std::invalid_argument);
  bad["samples"][0]["imc"].erase("rpq_inserts");
  EXPECT_THROW(parse_recording(bad), std::invalid_argument);
  // An interval of no length has no rate and could not be stored.
  nlohmann::json empty = report_json(original);
  empty["samples"][0]["interval_ns"] = 0;
  EXPECT_THROW(parse_recording(empty), std::invalid_argument);
}

}  // namespace
}  // namespace nabla::memlat
