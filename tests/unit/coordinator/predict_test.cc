// `nabla predict` on a database filled through db::Store with known training
// samples and gradients: every expected number is worked out by hand below.
#include "nabla/coordinator/predict.hh"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <sstream>
#include <string>

#include "nabla/db/store.hh"

namespace nabla::coordinator {
namespace {

namespace fs = std::filesystem;
constexpr double kZ95 = 1.959963984540054;  // Phi^-1(0.975)
constexpr double kMs = 1e6;

class PredictTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("nabla-predict-test-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    path_ = (dir_ / "p.db").string();
    db::Store store = db::Store::open(path_, 1'700'000'000'000'000'000);
    db::RunStart start;
    start.kind = db::RunKind::kDemo;
    start.tool_version = "test";
    start.started_ns = 1'700'000'000'000'000'000;
    run_ = store.begin_run(start);
    const auto view = store.transaction_type_id("/view");
    const auto auth = store.transaction_type_id("/auth");

    auto link = [&](const char* src, int sport, const char* dst, int dport) {
      db::Link l;
      l.run_id = run_;
      l.src_host = src;
      l.src_comm = "nabla-tier";
      l.src_port = sport;
      l.dst_host = dst;
      l.dst_comm = "nabla-tier";
      l.dst_port = dport;
      return store.add_link(l);
    };
    const auto web_app = link("web", 0, "app", 9002);
    const auto app_db = link("app", 0, "db", 9003);
    const auto app_audit = link("app", 0, "db", 9004);
    link("db", 9003, "app", 0);  // measured by nobody: selecting it must say so

    db::Phase training;
    training.run_id = run_;
    training.kind = db::PhaseKind::kTraining;
    training.started_ns = start.started_ns;
    const auto training_id = store.add_phase(training);
    db::Phase active;
    active.run_id = run_;
    active.kind = db::PhaseKind::kActive;
    active.link_id = web_app;
    active.started_ns = start.started_ns + 1;
    const auto active_id = store.add_phase(active);
    {
      auto writer = store.sample_writer(run_);
      auto add = [&](std::int64_t phase, std::int64_t type, double ms) {
        db::Sample s;
        s.phase_id = phase;
        s.send_ns = start.started_ns;
        s.latency_ns = static_cast<std::int64_t>(ms * kMs);
        s.type_id = type;
        writer.add(s);
      };
      // /view training: 10, 12, 14, 16 ms -> mean 13 ms, variance 20/3 ms^2,
      // squared standard error (20/3)/4 = 5/3 ms^2.
      for (double ms : {10.0, 12.0, 14.0, 16.0}) add(training_id, view, ms);
      // /auth training: 5, 7 ms -> mean 6 ms, variance 2, se^2 = 1 ms^2.
      for (double ms : {5.0, 7.0}) add(training_id, auth, ms);
      // Active-phase samples are not the baseline: far off, they would show.
      for (int i = 0; i < 10; ++i) add(active_id, view, 500.0);
      writer.flush();
    }
    auto grad = [&](std::int64_t link_id, std::int64_t type, double v, double lo, double hi) {
      db::Gradient g;
      g.run_id = run_;
      g.link_id = link_id;
      g.type_id = type;
      g.value = v;
      g.ci_low = lo;
      g.ci_high = hi;
      store.add_gradient(g);
    };
    grad(web_app, view, 1.0, 0.9, 1.1);
    grad(app_db, view, 3.0, 2.8, 3.2);
    grad(app_audit, view, 0.0, 0.0, 0.05);  // clamped at 0: se from the high side
    grad(web_app, auth, 1.0, 0.98, 1.02);
    grad(app_db, auth, 0.0, 0.0, 0.02);
    grad(app_audit, auth, 0.0, 0.0, 0.02);
    store.finish_run(run_, db::RunStatus::kComplete, start.started_ns + 10);
  }
  void TearDown() override { fs::remove_all(dir_); }

  PredictionReport predict(const std::vector<std::string>& sets) {
    db::Store store = db::Store::open_read_only(path_);
    std::vector<LatencySet> parsed;
    for (const auto& s : sets) parsed.push_back(parse_latency_set(s));
    return predict_run(store.database(), run_, parsed);
  }

  fs::path dir_;
  std::string path_;
  std::int64_t run_ = 0;
};

const TypePrediction& type(const PredictionReport& r, const std::string& name) {
  for (const auto& t : r.types)
    if (t.type == name) return t;
  throw std::runtime_error("no type " + name);
}

TEST(ParseLatencySet, SignsUnitsAndStddev) {
  LatencySet s = parse_latency_set("web->app=+20ms");
  EXPECT_EQ(s.selector, "web->app");
  EXPECT_DOUBLE_EQ(s.delta_ns, 20e6);
  EXPECT_DOUBLE_EQ(s.delta_stddev_ns, 0);
  s = parse_latency_set(" app -> db = -500us ~ 20us ");
  EXPECT_EQ(s.selector, "app -> db");
  EXPECT_DOUBLE_EQ(s.delta_ns, -500e3);
  EXPECT_DOUBLE_EQ(s.delta_stddev_ns, 20e3);
  EXPECT_DOUBLE_EQ(parse_latency_set("a->b=35ms").delta_ns, 35e6);
  EXPECT_THROW(parse_latency_set("web->app"), std::invalid_argument);
  EXPECT_THROW(parse_latency_set("web->app=20"), std::invalid_argument);
  EXPECT_THROW(parse_latency_set("web->app=fast"), std::invalid_argument);
  EXPECT_THROW(parse_latency_set("=20ms"), std::invalid_argument);
}

TEST_F(PredictTest, ClosedFormMeanAndInterval) {
  const PredictionReport r = predict({"web->app=+20ms", "app->db=+35ms"});
  ASSERT_EQ(r.types.size(), 2u);
  ASSERT_EQ(r.selections.size(), 2u);
  // app->db selects both links from app to db (the db at 9003, the audit at 9004).
  EXPECT_EQ(r.selections[1].links.size(), 2u);

  const TypePrediction& view = type(r, "/view");
  ASSERT_FALSE(view.missing);
  EXPECT_EQ(view.samples, 4);
  EXPECT_NEAR(view.baseline_ns, 13 * kMs, 1e-6);
  EXPECT_NEAR(view.baseline_se_ns, std::sqrt(5.0 / 3.0) * kMs, 1e-3);
  // 13 + 20*1 + 35*3 + 35*0 = 138 ms.
  EXPECT_NEAR(view.predicted_ns, 138 * kMs, 1e-3);
  // Gradient standard errors from the CI half-widths: 0.1/z, 0.2/z, 0.05/z.
  const double var_ms2 = 5.0 / 3.0 + std::pow(20 * 0.1 / kZ95, 2) + std::pow(35 * 0.2 / kZ95, 2) +
                         std::pow(35 * 0.05 / kZ95, 2);
  EXPECT_NEAR(view.stddev_ns, std::sqrt(var_ms2) * kMs, 1.0);
  EXPECT_NEAR(view.ci_low_ns, (138 - kZ95 * std::sqrt(var_ms2)) * kMs, 1.0);
  EXPECT_NEAR(view.ci_high_ns, (138 + kZ95 * std::sqrt(var_ms2)) * kMs, 1.0);
  ASSERT_EQ(view.terms.size(), 3u);

  const TypePrediction& auth = type(r, "/auth");
  ASSERT_FALSE(auth.missing);
  EXPECT_EQ(auth.samples, 2);
  EXPECT_NEAR(auth.predicted_ns, 26 * kMs, 1e-3);  // 6 + 20*1
  const double auth_var_ms2 =
      1.0 + std::pow(20 * 0.02 / kZ95, 2) + 2 * std::pow(35 * 0.02 / kZ95, 2);
  EXPECT_NEAR(auth.stddev_ns, std::sqrt(auth_var_ms2) * kMs, 1.0);
}

TEST_F(PredictTest, NoSetIsTheBaselineAndLatencyStddevWidensTheInterval) {
  const PredictionReport none = predict({});
  EXPECT_NEAR(type(none, "/view").predicted_ns, 13 * kMs, 1e-3);
  EXPECT_NEAR(type(none, "/view").stddev_ns, std::sqrt(5.0 / 3.0) * kMs, 1.0);
  // rho(dl) = (2 ms)^2 on web->app adds rho(dl)*g^2 + rho(dl)*rho(g).
  const PredictionReport r = predict({"web->app=+20ms~2ms"});
  const double se_g = 0.1 / kZ95;
  const double var_ms2 = 5.0 / 3.0 + 4 * 1.0 + 400 * se_g * se_g + 4 * se_g * se_g;
  EXPECT_NEAR(type(r, "/view").predicted_ns, 33 * kMs, 1e-3);
  EXPECT_NEAR(type(r, "/view").stddev_ns, std::sqrt(var_ms2) * kMs, 1.0);
}

TEST_F(PredictTest, LabelSelectsOneLinkAndRepeatedSetsAdd) {
  const PredictionReport r =
      predict({"tcp app/nabla-tier:0 -> db/nabla-tier:9003=+10ms", "app->db=-4ms"});
  ASSERT_EQ(r.selections[0].links.size(), 1u);
  // 9003 gets +10 - 4 = +6 ms (gradient 3), 9004 gets -4 ms (gradient 0).
  EXPECT_NEAR(type(r, "/view").predicted_ns, (13 + 18) * kMs, 1e-3);
  EXPECT_NEAR(type(r, "/auth").predicted_ns, 6 * kMs, 1e-3);
  // The campaign label form selects the same single link.
  const PredictionReport c = predict({"tcp app -> db:9003=+10ms"});
  ASSERT_EQ(c.selections[0].links.size(), 1u);
  EXPECT_EQ(c.selections[0].links[0], "tcp app/nabla-tier:0 -> db/nabla-tier:9003");
  EXPECT_NEAR(type(c, "/view").predicted_ns, (13 + 30) * kMs, 1e-3);
  EXPECT_EQ(campaign_link_label("tcp", "app", 9002, "web", 0), "tcp app:9002 -> web");
}

TEST_F(PredictTest, ErrorsNameTheProblem) {
  try {
    predict({"web->db=+1ms"});
    FAIL() << "expected an error";
  } catch (const std::invalid_argument& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("web->db"), std::string::npos) << msg;
    EXPECT_NE(msg.find("tcp web/nabla-tier:0 -> app/nabla-tier:9002"), std::string::npos) << msg;
  }
  EXPECT_THROW(predict({"webapp=+1ms"}), std::invalid_argument);
  // A link measured for no type: every type reports what is missing.
  const PredictionReport r = predict({"db->app=+1ms"});
  for (const auto& t : r.types) {
    ASSERT_TRUE(t.missing) << t.type;
    EXPECT_NE(t.missing->find("db/nabla-tier:9003 -> app"), std::string::npos) << *t.missing;
  }
  db::Store store = db::Store::open_read_only(path_);
  EXPECT_THROW(predict_run(store.database(), run_ + 100, {}), std::runtime_error);
}

TEST_F(PredictTest, CommandLineJson) {
  const std::string cmd = std::string(NABLA_BINARY) + " predict --db " + path_ + " --run " +
                          std::to_string(run_) +
                          " --set 'web->app=+20ms' --set 'app->db=+35ms' --json 2>&1";
  FILE* p = ::popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string out;
  char buf[4096];
  while (size_t n = std::fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  ASSERT_EQ(::pclose(p), 0) << out;
  const auto j = nlohmann::json::parse(out);
  EXPECT_EQ(j["run_id"], run_);
  ASSERT_EQ(j["predictions"].size(), 2u);
  for (const auto& t : j["predictions"]) {
    const double expected = t["type"] == "/view" ? 138e6 : 26e6;
    EXPECT_NEAR(t["predicted_ns"].get<double>(), expected, 1e-3) << t.dump();
  }
  // A selector that matches nothing is exit 2 (bad input), naming it.
  const std::string bad = std::string(NABLA_BINARY) + " predict --db " + path_ + " --run " +
                          std::to_string(run_) + " --set 'x->y=+1ms' 2>&1";
  p = ::popen(bad.c_str(), "r");
  ASSERT_NE(p, nullptr);
  out.clear();
  while (size_t n = std::fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  const int status = ::pclose(p);
  EXPECT_EQ(WEXITSTATUS(status), 2) << out;
  EXPECT_NE(out.find("x->y"), std::string::npos) << out;
}

// A response link app -> web swept at 1, 4 and 16 ms (actual 0.8, 3.2 and
// 12.8 ms) for /view, measured at one amplitude (4 ms actual) for /auth.
class PredictRangeTest : public PredictTest {
 protected:
  void SetUp() override {
    PredictTest::SetUp();
    db::Store store = db::Store::open(path_, 1'700'000'000'000'000'000);
    db::Link l;
    l.run_id = run_;
    l.src_host = "app";
    l.src_port = 9002;
    l.dst_host = "web";
    const std::int64_t link = store.add_link(l);
    db::Gradient g;
    g.run_id = run_;
    g.link_id = link;
    g.type_id = store.transaction_type_id("/view");
    g.value = 1.5;
    g.ci_low = 1.4;
    g.ci_high = 1.6;
    g.actual_amplitude_ns = 3.2 * kMs;
    const std::int64_t swept = store.add_gradient(g);
    const double curve[][2] = {{1, 1.0}, {4, 1.5}, {16, 1.9}};
    for (const auto& [ms, value] : curve) {
      store.add_gradient_amplitude({run_, swept, std::nullopt, static_cast<std::int64_t>(ms * kMs),
                                    0.8 * ms * kMs, value, value - 0.1, value + 0.1});
    }
    g.type_id = store.transaction_type_id("/auth");
    g.value = 1.0;
    g.actual_amplitude_ns = 4 * kMs;
    store.add_gradient(g);
  }
};

TEST_F(PredictRangeTest, ReadsTheGradientOffTheMeasuredCurve) {
  const PredictionReport r = predict({"app->web=+8ms"});
  EXPECT_TRUE(r.warnings.empty());
  const PredictionTerm& view = type(r, "/view").terms.at(0);
  // Between 3.2 ms (1.5) and 12.8 ms (1.9): 1.5 + 0.4 * 4.8 / 9.6.
  EXPECT_NEAR(view.gradient, 1.7, 1e-12);
  EXPECT_NEAR(view.contribution_ns, 1.7 * 8 * kMs, 1e-3);
  ASSERT_TRUE(view.range_ns.has_value());
  EXPECT_NEAR(view.range_ns->first, 0.8 * kMs, 1e-6);
  EXPECT_NEAR(view.range_ns->second, 12.8 * kMs, 1e-6);
  ASSERT_EQ(view.points.size(), 2u);
  EXPECT_NEAR(view.points[0].amplitude_ns, 3.2 * kMs, 1e-6);
  EXPECT_NEAR(view.gradient_se, 0.1 / kZ95, 1e-9);
  EXPECT_NEAR(type(r, "/view").predicted_ns, 13 * kMs + 1.7 * 8 * kMs, 1e-3);
  // Below the smallest amplitude: the smallest's gradient.
  EXPECT_DOUBLE_EQ(type(predict({"app->web=+0.5ms"}), "/view").terms.at(0).gradient, 1.0);
  const PredictionTerm& auth = type(r, "/auth").terms.at(0);
  EXPECT_DOUBLE_EQ(auth.gradient, 1.0);
  ASSERT_EQ(auth.points.size(), 1u);
  EXPECT_FALSE(auth.beyond_range);  // 8 ms is 2x its 4 ms: still in range
  const nlohmann::json j = to_json(r);
  EXPECT_EQ(j["predictions"][1]["terms"][0]["range_ns"].size(), 2u);
  EXPECT_EQ(j["predictions"][1]["terms"][0]["points"].size(), 2u);
  EXPECT_TRUE(j["warnings"].empty());
}

TEST_F(PredictRangeTest, BeyondTwiceTheRangeWarnsPerTypeAndStrictRefuses) {
  // 10 ms: beyond /auth's 2 x 4 ms, within /view's 2 x 12.8 ms.
  const PredictionReport near = predict({"app->web=+10ms"});
  ASSERT_EQ(near.warnings.size(), 1u);
  EXPECT_EQ(
      near.warnings[0],
      "+10 ms on tcp app:9002 -> web:0 for /auth is beyond 2x its measured amplitudes (4 ms); "
      "the gradient there was not measured");
  const PredictionReport r = predict({"app->web=+30ms"});
  ASSERT_EQ(r.warnings.size(), 2u);
  EXPECT_EQ(
      r.warnings[1],
      "+30 ms on tcp app:9002 -> web:0 for /view is beyond 2x its measured amplitudes (0.8 to "
      "12.8 ms); the gradient there was not measured");
  EXPECT_DOUBLE_EQ(type(r, "/view").terms.at(0).gradient, 1.9);
  EXPECT_TRUE(type(r, "/view").terms.at(0).beyond_range);
  auto run_cli = [&](const std::string& extra, int& status) {
    const std::string cmd = std::string(NABLA_BINARY) + " predict --db " + path_ + " --run " +
                            std::to_string(run_) + " --set 'app->web=+30ms' --json " + extra;
    FILE* p = ::popen(cmd.c_str(), "r");
    std::string out;
    char buf[4096];
    while (size_t n = std::fread(buf, 1, sizeof buf, p)) out.append(buf, n);
    status = WEXITSTATUS(::pclose(p));
    return out;
  };
  int status = -1;
  std::string out = run_cli("2>/dev/null", status);
  EXPECT_EQ(status, 0) << out;
  EXPECT_EQ(nlohmann::json::parse(out)["warnings"].size(), 2u);
  out = run_cli("2>&1 >/dev/null", status);
  EXPECT_NE(out.find("warning: +30 ms on tcp app:9002 -> web:0 for /auth is beyond 2x"),
            std::string::npos)
      << out;
  out = run_cli("--strict 2>&1", status);
  EXPECT_EQ(status, 1) << out;
  EXPECT_NE(out.find("--strict: +30 ms on tcp app:9002 -> web:0 for /auth is beyond 2x"),
            std::string::npos)
      << out;
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1) << out;
}

}  // namespace
}  // namespace nabla::coordinator
