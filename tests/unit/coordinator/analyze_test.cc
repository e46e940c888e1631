// `nabla analyze`: the command layer on generated CSV files, and the real
// binary for exit codes and error lines.
#include "nabla/coordinator/analyze.hh"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>

namespace nabla::coordinator {
namespace {

namespace fs = std::filesystem;

class AnalyzeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("nabla-analyze-test-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Poisson arrivals at `rate_rps`; latency = 5 ms + Exp(1 ms) + g_type * a
  // square wave of `amplitude_ns` and `period_ns` (high first).
  std::string write_series(const std::string& name, double rate_rps, int n, double amplitude_ns,
                           std::int64_t period_ns, std::array<double, 2> gradients,
                           std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::exponential_distribution<double> gap(rate_rps / 1e9);
    std::exponential_distribution<double> noise(1.0 / 1e6);
    std::bernoulli_distribution which(0.5);
    const fs::path path = dir_ / name;
    std::ofstream out(path);
    out << "t_ns,latency_ns,type\n";
    double t = 1e12;  // a large offset, as real monotonic clocks have
    for (int i = 0; i < n; ++i) {
      t += gap(rng);
      const auto t_ns = static_cast<std::int64_t>(t);
      const int type = which(rng) ? 1 : 0;
      const bool high = period_ns > 0 && (t_ns - 1'000'000'000'000) % period_ns < period_ns / 2;
      const double latency = 5e6 + noise(rng) + (high ? gradients[type] * amplitude_ns : 0.0);
      out << t_ns << ',' << static_cast<std::int64_t>(latency) << ',' << (type ? "/bid" : "/view")
          << '\n';
    }
    return path.string();
  }

  fs::path dir_;
};

TEST_F(AnalyzeTest, GradientRecoversKnownGradientsInsideTheirCi) {
  const std::string file =
      write_series("g.csv", 1000, 26000, 2e6, 1'600'000'000, {1.0, 3.0}, /*seed=*/7);
  AnalyzeGradientOptions o;
  o.file = file;
  o.bin_width_ns = 50'000'000;
  o.bins = 512;  // 25.6 s
  o.period_ns = 1'600'000'000;
  o.delay_ns = 2'000'000;
  const auto r = analyze_gradient(o);
  ASSERT_EQ(r["results"].size(), 2u);
  for (const auto& row : r["results"]) {
    const double truth = row["type"] == "/view" ? 1.0 : 3.0;
    const double g = row["gradient"].get<double>();
    EXPECT_NEAR(g, truth, 0.05 * truth) << row.dump();
    EXPECT_LE(row["ci_low"].get<double>(), truth) << row.dump();
    EXPECT_GE(row["ci_high"].get<double>(), truth) << row.dump();
    EXPECT_EQ(row["k_d"].get<int>(), 16);
    EXPECT_TRUE(row["reliable"].get<bool>());
  }
  EXPECT_TRUE(r["warnings"].empty());
}

// The baseline's types are matched by name, whatever order they first appear
// in; a type missing from the baseline is a warning, not a silent zero.
TEST_F(AnalyzeTest, BaselineTypesAreMatchedByName) {
  const std::string file =
      write_series("m.csv", 1000, 26000, 2e6, 1'600'000'000, {1.0, 3.0}, /*seed=*/21);
  const fs::path base = dir_ / "base.csv";
  {
    std::ofstream out(base);
    out << "t_ns,latency_ns,type\n";
    std::mt19937_64 rng(99);
    std::exponential_distribution<double> noise(1.0 / 1e6);
    // /bid first, then /view: the reverse of ids 0 and 1 in most seeds, and
    // /other which the measured file does not have.
    for (int i = 0; i < 26000; ++i) {
      const char* type = i % 2 == 0 ? "/bid" : (i % 7 == 0 ? "/other" : "/view");
      out << 5'000'000'000 + i * 1'000'000LL << ',' << static_cast<std::int64_t>(5e6 + noise(rng))
          << ',' << type << '\n';
    }
  }
  AnalyzeGradientOptions o{file, 50'000'000, 512, 1'600'000'000, 2'000'000, base.string(), 0.95};
  const auto r = analyze_gradient(o);
  ASSERT_EQ(r["results"].size(), 2u);
  for (const auto& row : r["results"]) {
    const double truth = row["type"] == "/view" ? 1.0 : 3.0;
    EXPECT_NEAR(row["gradient"].get<double>(), truth, 0.05 * truth) << row.dump();
  }
  EXPECT_TRUE(r["warnings"].empty()) << r["warnings"].dump();

  const fs::path partial = dir_ / "partial.csv";
  std::ofstream(partial) << "t_ns,latency_ns,type\n1,5000000,/view\n2000000,5000000,/view\n";
  o.baseline_file = partial.string();
  const auto r2 = analyze_gradient(o);
  ASSERT_EQ(r2["warnings"].size(), 2u) << r2["warnings"].dump();  // /bid missing; /view sparse
  EXPECT_NE(r2["warnings"].dump().find("'/bid' has no records in the baseline"), std::string::npos)
      << r2["warnings"].dump();
}

TEST_F(AnalyzeTest, GradientOfAnUnaffectedTypeIsNearZero) {
  const std::string file =
      write_series("z.csv", 1000, 26000, 2e6, 1'600'000'000, {0.0, 1.0}, /*seed=*/11);
  AnalyzeGradientOptions o{file, 50'000'000, 512, 1'600'000'000, 2'000'000, std::nullopt, 0.95};
  const auto r = analyze_gradient(o);
  for (const auto& row : r["results"]) {
    if (row["type"] != "/view") continue;
    EXPECT_LT(std::fabs(row["gradient"].get<double>()), 0.05) << row.dump();
    EXPECT_LE(row["ci_low"].get<double>(), 0.0 + 1e-12);
  }
}

TEST_F(AnalyzeTest, PeriodThatDoesNotFitTheWindowIsRejected) {
  const std::string file = write_series("p.csv", 1000, 2000, 2e6, 0, {1, 1}, 1);
  AnalyzeGradientOptions o{file, 50'000'000, 128, 1'700'000'000, 2'000'000, std::nullopt, 0.95};
  EXPECT_THROW(analyze_gradient(o), std::invalid_argument);
}

TEST_F(AnalyzeTest, TestsOnPoissonArrivals) {
  const std::string file = write_series("t.csv", 2000, 5000, 0, 0, {0, 0}, 3);
  const auto r = analyze_tests({file, 1});
  EXPECT_EQ(r["samples"].get<int>(), 5000);
  EXPECT_TRUE(r["anderson_darling"]["exponential_at_5pct"].get<bool>()) << r.dump();
  EXPECT_EQ(r["anderson_darling"]["critical_values"].size(), 5u);
  EXPECT_TRUE(r["adf"]["stationary_at_5pct"].get<bool>());  // iid noise is stationary
  EXPECT_LT(r["adf"]["p_value"].get<double>(), 1e-6);
  EXPECT_TRUE(r["spearman"]["independent_at_5pct"].get<bool>()) << r.dump();
  EXPECT_LT(std::fabs(r["spearman"]["rho"].get<double>()), 0.05);
}

TEST_F(AnalyzeTest, PercentilesHaveCiOrSayNone) {
  const std::string file = write_series("q.csv", 1000, 1000, 0, 0, {0, 0}, 5);
  AnalyzePercentilesOptions o;
  o.file = file;
  o.percentiles = {50, 99.99};
  const auto r = analyze_percentiles(o);
  const auto& p50 = r["percentiles"][0];
  EXPECT_LE(p50["ci_low_ns"].get<double>(), p50["value_ns"].get<double>());
  EXPECT_GE(p50["ci_high_ns"].get<double>(), p50["value_ns"].get<double>());
  // True median of 5 ms + Exp(1 ms) is 5 ms + ln 2 ms.
  EXPECT_NEAR(p50["value_ns"].get<double>(), 5e6 + std::log(2.0) * 1e6, 0.1e6);
  EXPECT_TRUE(r["percentiles"][1]["ci_low_ns"].is_null());  // 1000 samples cannot bound p99.99
  o.type = "/nope";
  EXPECT_THROW(analyze_percentiles(o), std::invalid_argument);
}

// Runs the real binary; returns exit status and stderr.
std::pair<int, std::string> run_nabla(const std::string& args) {
  const std::string cmd = std::string(NABLA_BINARY) + " " + args + " 2>&1 >/dev/null";
  FILE* p = ::popen(cmd.c_str(), "r");
  std::string err;
  char buf[512];
  while (p && std::fgets(buf, sizeof buf, p)) err += buf;
  const int status = p ? ::pclose(p) : -1;
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, err};
}

TEST_F(AnalyzeTest, MalformedCsvGetsOneLineWithItsLineNumber) {
  const fs::path bad = dir_ / "bad.csv";
  std::ofstream(bad) << "t_ns,latency_ns\n1,2\n3,4\n5,oops\n";
  const auto [code, err] = run_nabla("analyze tests " + bad.string());
  EXPECT_EQ(code, 1);
  EXPECT_EQ(err, "nabla: error: " + bad.string() + ":4: latency_ns 'oops' is not an integer\n");
}

TEST_F(AnalyzeTest, BadFlagValuesAreUsageErrors) {
  const std::string file = write_series("f.csv", 1000, 100, 0, 0, {0, 0}, 1);
  auto [code, err] = run_nabla("analyze gradient " + file +
                               " --bin-width 50 --bins 128 --period 1.6s --delay 2ms");
  EXPECT_EQ(code, 2);
  EXPECT_NE(err.find("--bin-width"), std::string::npos) << err;
  std::tie(code, err) = run_nabla("analyze percentiles " + file + " --p 150");
  EXPECT_EQ(code, 2);
  EXPECT_NE(err.find("(0, 100]"), std::string::npos) << err;
}

}  // namespace
}  // namespace nabla::coordinator
