// `nabla load`: flag parsing (no sockets), exit codes of the real binary, and
// measurements against the real nabla-tier on 127.0.0.1 (a child process
// started here and killed by pid). Every run is bounded by --max-duration of
// a few seconds.
#include "nabla/coordinator/load_command.hh"

#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "../loadgen/controller_test_support.hh"
#include "fake_resolver.hh"
#include "loopback.hh"
#include "nabla/common/clock.hh"
#include "nabla/common/cpu_latency.hh"
#include "nabla/common/netns.hh"
#include "nabla/coordinator/demo.hh"
#include "nabla/db/reads.hh"
#include "nabla/db/store.hh"
#include "nabla/tier/echo_server.hh"
#include "tier_process.hh"

namespace nabla::coordinator {
using nabla::testing::free_loopback_port;
namespace {

namespace fs = std::filesystem;
using nabla::testing::loopback_accepts;
using nabla::testing::TierProcess;
using nlohmann::json;

// nabla-tier is built beside nabla (build/tier/ vs build/coordinator/).
std::string tier_binary() {
  return (fs::path(NABLA_BINARY).parent_path().parent_path() / "tier" / "nabla-tier").string();
}

// nabla-tier on 127.0.0.1 (any free port) with `workers` workers, one --url
// per entry of `urls` (e.g. "/a service=fixed:1ms mode=sleep").
TierProcess loopback_tier(int workers, const std::vector<std::string>& urls) {
  std::vector<std::string> args{"--listen", "127.0.0.1:0", "--workers", std::to_string(workers)};
  for (const auto& url : urls) {
    args.push_back("--url");
    args.push_back(url);
  }
  return TierProcess(tier_binary(), std::move(args));
}

LoadOptions base(uint16_t port, const std::string& path = "/a") {
  LoadOptions o;
  o.target = "http://127.0.0.1:" + std::to_string(port) + path;
  o.rate = "500";
  o.connections = 8;
  o.threads = 1;
  o.json = true;
  o.max_duration = "8s";
  // A shared 2-core VM (loadgen/controller_test_support.hh).
  o.late_threshold = "1ms";
  return o;
}

json run_json(const LoadOptions& o) {
  std::ostringstream out, err;
  EXPECT_EQ(run_load(o, out, err), 0) << err.str();
  return json::parse(out.str());
}

// True while a descriptor of this process is open on /dev/cpu_dma_latency.
bool holds_cpu_latency_device() {
  std::error_code ec;
  for (const auto& fd : fs::directory_iterator("/proc/self/fd", ec)) {
    std::error_code link_ec;
    if (fs::read_symlink(fd.path(), link_ec) == common::kCpuLatencyDevice) return true;
  }
  return false;
}

std::vector<std::string> reasons_of(const json& j) {
  return j["reasons"].get<std::vector<std::string>>();
}

bool has_reason(const json& j, const std::string& prefix) {
  for (const auto& r : reasons_of(j)) {
    if (r.rfind(prefix, 0) == 0) return true;
  }
  return false;
}

// An N/A is the machine's when every reason is one a busy machine produces
// on a healthy target and the machine was busy while it ran, as a probe
// thread measured over the same seconds (loadgen/controller_test_support.hh).
bool machine_refused(const json& j, bool quiet_during_run) {
  return j["verdict"] != "ok" &&
         loadgen::testing::only_machine_reasons(j["reasons"].get<std::vector<std::string>>()) &&
         !quiet_during_run;
}

// n/a only because the series was dependent in time (not iid, not
// stationary), with the in-flight times dependent too.
bool only_dependence(const json& j) {
  if (j["verdict"] == "ok" || j["reasons"].empty()) return false;
  for (const auto& r : j["reasons"].get<std::vector<std::string>>()) {
    const bool iid = r.rfind("not iid", 0) == 0 &&
                     r.find("in-flight times are dependent too") != std::string::npos;
    if (!iid && r.rfind("not stationary", 0) != 0) return false;
  }
  return true;
}

// run_json with a wake-up probe running beside it; `quiet` tells whether the
// machine kept its timers during the run.
json run_json_watched(const LoadOptions& o, bool& quiet) {
  loadgen::testing::WakeupMonitor monitor;
  json j = run_json(o);
  quiet = monitor.quiet();
  return j;
}

// ------------------------------------------------------------------- parsing

TEST(LoadFlags, ATargetNameIsResolvedOnceToIpv4AndKeptForTheHostHeader) {
  LoadOptions o = base(8080, "/view");
  o.target = "http://web01:8080/view";
  LoadPlan p = parse_load_options(o);
  EXPECT_EQ(p.target.host, "web01");
  const nabla::testing::FakeResolver fake({{"web01", {"fd00::2", "10.0.0.2"}}});
  std::ostringstream log;
  resolve_load_target(p, fake, log);
  EXPECT_EQ(fake.lookups("web01"), 1);
  EXPECT_EQ(p.target.host, "10.0.0.2");
  EXPECT_EQ(p.target.host_name, "web01");
  EXPECT_EQ(p.controller.engine.host, "10.0.0.2");
  EXPECT_EQ(p.controller.engine.protocol.host_header, "web01");
  EXPECT_EQ(log.str(), "resolved web01 -> 10.0.0.2\n");

  o.target = "http://nosuch:8080/";
  LoadPlan missing = parse_load_options(o);
  try {
    resolve_load_target(missing, fake, log);
    ADD_FAILURE() << "resolved an unknown name";
  } catch (const common::ResolveError& e) {
    EXPECT_STREQ(e.what(), "--target: cannot resolve 'nosuch': Name or service not known");
  }
  LoadPlan literal = parse_load_options(base(8080));
  resolve_load_target(literal, fake, log);
  EXPECT_EQ(literal.target.host, "127.0.0.1");
  EXPECT_EQ(fake.lookups(), 2);
}

TEST(LoadFlags, ParsesTargetsAndDefaults) {
  LoadOptions o = base(8080, "/view");
  o.mix = "/view=0.7,/bid=0.3";
  o.percentiles = {"99.9,99", "90"};
  o.ci_width = "20us";
  const LoadPlan p = parse_load_options(o);
  EXPECT_EQ(p.target.scheme, "http");
  EXPECT_EQ(p.target.host, "127.0.0.1");
  EXPECT_EQ(p.target.port, 8080);
  ASSERT_EQ(p.controller.engine.protocol.urls.size(), 2u);
  EXPECT_EQ(p.controller.engine.protocol.urls[1].path, "/bid");
  EXPECT_DOUBLE_EQ(p.controller.engine.protocol.urls[0].weight, 0.7);
  // The first is the target; p50 is added for the tables.
  EXPECT_EQ(p.controller.percentiles, (std::vector<double>{99.9, 99, 90, 50}));
  EXPECT_DOUBLE_EQ(p.controller.ci_width_ns, 20'000);
  EXPECT_EQ(p.controller.max_duration_ns, 8'000'000'000);
  EXPECT_EQ(p.rates, (std::vector<double>{500}));
  EXPECT_TRUE(p.controller.engine.software_rx_timestamps);

  EXPECT_EQ(parse_target("memcache://10.9.0.2").port, 11211);
  EXPECT_EQ(parse_target("redis://localhost").host, "127.0.0.1");
  EXPECT_EQ(parse_target("http://127.0.0.1").path, "/");
  EXPECT_EQ(parse_target("echo://127.0.0.1:9").port, 9);
  // IPv6 in brackets, as in URLs; the HTTP Host header keeps them.
  EXPECT_EQ(parse_target("http://[fd00::2]:8080/x").host, "fd00::2");
  EXPECT_EQ(parse_target("http://[fd00::2]:8080/x").port, 8080);
  EXPECT_EQ(parse_target("memcache://[::1]").port, 11211);
  LoadOptions v6 = base(1);
  v6.target = "http://[::1]:8080/";
  const LoadPlan v6_plan = parse_load_options(v6);
  EXPECT_EQ(v6_plan.controller.engine.host, "::1");
  EXPECT_EQ(v6_plan.controller.engine.protocol.host_header, "[::1]");
  EXPECT_THROW(parse_target("http://fd00::2:8080/"), std::invalid_argument);
  EXPECT_THROW(parse_target("http://[fd00::2:8080/"), std::invalid_argument);

  LoadOptions m = base(1);
  m.target = "memcache://127.0.0.1:11211";
  m.mix = "get=3,set=1";
  EXPECT_DOUBLE_EQ(parse_load_options(m).controller.engine.protocol.get_ratio, 0.75);
  // Defaults: Poisson arrivals, 1000 uniform keys, 32-byte values.
  EXPECT_EQ(p.controller.engine.schedule.kind, nabla::loadgen::ScheduleKind::kExponential);
  EXPECT_EQ(parse_load_options(m).controller.engine.protocol.keys, 1000u);
  m.keys = 50'000;
  m.key_dist = "zipf:1.2";
  m.value_size = 4096;
  m.interarrival = "lognormal:0.5";
  const LoadPlan mp = parse_load_options(m);
  EXPECT_EQ(mp.controller.engine.protocol.keys, 50'000u);
  EXPECT_EQ(mp.controller.engine.protocol.key_distribution, nabla::loadgen::KeyDistribution::kZipf);
  EXPECT_DOUBLE_EQ(mp.controller.engine.protocol.zipf_s, 1.2);
  EXPECT_EQ(mp.controller.engine.protocol.value_bytes, 4096u);
  EXPECT_EQ(mp.controller.engine.schedule.kind, nabla::loadgen::ScheduleKind::kLognormal);
  EXPECT_DOUBLE_EQ(mp.controller.engine.schedule.lognormal_sigma, 0.5);
  m.key_dist = "zipf";  // the default exponent
  EXPECT_DOUBLE_EQ(parse_load_options(m).controller.engine.protocol.zipf_s, 0.99);
  o.interarrival = "fixed";
  EXPECT_EQ(parse_load_options(o).controller.engine.schedule.kind,
            nabla::loadgen::ScheduleKind::kFixed);

  // --cpus: a list and ranges, in the order given (thread i on the i-th).
  LoadOptions pinned = base(1);
  pinned.cpus = "0";
  EXPECT_EQ(parse_load_options(pinned).controller.engine.cpus, (std::vector<int>{0}));
  if (std::thread::hardware_concurrency() >= 2) {
    pinned.cpus = "1,0";
    EXPECT_EQ(parse_load_options(pinned).controller.engine.cpus, (std::vector<int>{1, 0}));
    pinned.cpus = "0-1";
    EXPECT_EQ(parse_load_options(pinned).controller.engine.cpus, (std::vector<int>{0, 1}));
  }
  EXPECT_TRUE(parse_load_options(base(1)).controller.engine.cpus.empty());

  // --cpu-latency-us: auto by default (0 when it may be held), off, or
  // whole microseconds; with agents auto holds nothing here.
  EXPECT_EQ(parse_load_options(base(1)).cpu_latency_us, 0);
  EXPECT_TRUE(parse_load_options(base(1)).cpu_latency_auto);
  LoadOptions qos = base(1);
  qos.cpu_latency_us = "off";
  EXPECT_EQ(parse_load_options(qos).cpu_latency_us, std::nullopt);
  EXPECT_FALSE(parse_load_options(qos).cpu_latency_auto);
  qos.cpu_latency_us = "0";
  EXPECT_EQ(parse_load_options(qos).cpu_latency_us, 0);
  qos.cpu_latency_us = "50";
  EXPECT_EQ(parse_load_options(qos).cpu_latency_us, 50);

  LoadOptions s = base(1);
  s.rate.clear();
  s.sweep = "1000:5000:5";
  const LoadPlan sp = parse_load_options(s);
  EXPECT_TRUE(sp.sweep);
  EXPECT_EQ(sp.rates, (std::vector<double>{1000, 2000, 3000, 4000, 5000}));
}

void expect_bad(LoadOptions o, const std::string& flag) {
  try {
    parse_load_options(o);
    ADD_FAILURE() << "accepted a bad " << flag;
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()).rfind(flag + ": ", 0), 0u) << e.what();
  }
}

TEST(LoadFlags, EveryBadValueNamesItsFlag) {
  auto with = [](auto change) {
    LoadOptions o = base(8080);
    change(o);
    return o;
  };
  expect_bad(with([](LoadOptions& o) { o.target = ""; }), "--target");
  expect_bad(with([](LoadOptions& o) { o.target = "ftp://127.0.0.1:21"; }), "--target");
  // A name is resolved later (resolve_load_target); a malformed one is a usage error.
  expect_bad(with([](LoadOptions& o) { o.target = "http://example..com:80/"; }), "--target");
  expect_bad(with([](LoadOptions& o) { o.target = "http://127.0.0.1:70000/"; }), "--target");
  expect_bad(with([](LoadOptions& o) { o.target = "echo://127.0.0.1"; }), "--target");
  expect_bad(with([](LoadOptions& o) { o.rate = ""; }), "--rate");
  expect_bad(with([](LoadOptions& o) { o.rate = "fast"; }), "--rate");
  expect_bad(with([](LoadOptions& o) { o.rate = "-5"; }), "--rate");
  expect_bad(with([](LoadOptions& o) { o.connections = 0; }), "--connections");
  expect_bad(with([](LoadOptions& o) { o.threads = 9; }), "--threads");
  expect_bad(with([](LoadOptions& o) { o.outstanding = 0; }), "--outstanding");
  expect_bad(with([](LoadOptions& o) { o.mix = "/a=0"; }), "--mix");
  expect_bad(with([](LoadOptions& o) { o.mix = "a=1"; }), "--mix");
  expect_bad(with([](LoadOptions& o) {
               o.target = "echo://127.0.0.1:7";
               o.mix = "x=1";
             }),
             "--mix");
  expect_bad(with([](LoadOptions& o) { o.percentiles = {"100"}; }), "--percentile");
  expect_bad(with([](LoadOptions& o) { o.percentiles = {"99,abc"}; }), "--percentile");
  expect_bad(with([](LoadOptions& o) { o.ci_width = "50"; }), "--ci-width");
  expect_bad(with([](LoadOptions& o) { o.ci_width = "0"; }), "--ci-width");
  expect_bad(with([](LoadOptions& o) { o.confidence = 1.0; }), "--confidence");
  expect_bad(with([](LoadOptions& o) { o.max_duration = "10ms"; }), "--max-duration");
  expect_bad(with([](LoadOptions& o) { o.late_threshold = "0"; }), "--late-threshold");
  expect_bad(with([](LoadOptions& o) { o.spin = "1s"; }), "--spin");
  expect_bad(with([](LoadOptions& o) { o.spin = "fast"; }), "--spin");
  expect_bad(with([](LoadOptions& o) { o.rt_priority = 100; }), "--rt-priority");
  expect_bad(with([](LoadOptions& o) { o.rt_priority = -1; }), "--rt-priority");
  if (std::thread::hardware_concurrency() <= 8) {  // --threads allows at most 8
    expect_bad(with([](LoadOptions& o) {           // a spinning real-time thread on every core
                 o.rt_priority = 10;
                 o.spin = "50us";
                 o.threads = static_cast<int>(std::thread::hardware_concurrency());
                 o.connections = o.threads;
               }),
               "--rt-priority");
  }
  expect_bad(with([](LoadOptions& o) { o.cpus = "zero"; }), "--cpus");
  expect_bad(with([](LoadOptions& o) { o.cpus = "1-0"; }), "--cpus");
  expect_bad(with([](LoadOptions& o) { o.cpus = "0,0"; }), "--cpus");
  expect_bad(with([](LoadOptions& o) { o.cpus = "-1"; }), "--cpus");
  expect_bad(with([](LoadOptions& o) { o.cpus = "1000"; }), "--cpus");  // not on this machine
  expect_bad(with([](LoadOptions& o) { o.cpu_latency_us = "-1"; }), "--cpu-latency-us");
  expect_bad(with([](LoadOptions& o) { o.cpu_latency_us = "5us"; }), "--cpu-latency-us");
  expect_bad(with([](LoadOptions& o) { o.interarrival = "poisson"; }), "--interarrival");
  expect_bad(with([](LoadOptions& o) { o.interarrival = "lognormal:0"; }), "--interarrival");
  expect_bad(with([](LoadOptions& o) { o.keys = 10; }), "--keys");  // http target
  auto kv = [](LoadOptions& o) { o.target = "redis://127.0.0.1:6379"; };
  expect_bad(with([&](LoadOptions& o) {
               kv(o);
               o.keys = 0;
             }),
             "--keys");
  expect_bad(with([&](LoadOptions& o) {
               kv(o);
               o.key_dist = "pareto";
             }),
             "--key-dist");
  expect_bad(with([&](LoadOptions& o) {
               kv(o);
               o.key_dist = "zipf:x";
             }),
             "--key-dist");
  expect_bad(with([&](LoadOptions& o) {
               kv(o);
               o.value_size = 0;
             }),
             "--value-size");
  expect_bad(with([](LoadOptions& o) { o.sweep = "1:2"; }), "--sweep");  // and --rate given
  expect_bad(with([](LoadOptions& o) {
               o.rate.clear();
               o.sweep = "5:1:3";
             }),
             "--sweep");
}

// The binary: bad flags are one line naming the flag, exit code 2.
TEST(LoadFlags, BinaryExitsTwoNamingTheFlag) {
  auto run = [](const std::string& args) {
    const std::string cmd = std::string(NABLA_BINARY) + " load " + args + " 2>&1";
    FILE* p = ::popen(cmd.c_str(), "r");
    std::string text;
    char buf[512];
    while (p && std::fgets(buf, sizeof buf, p)) text += buf;
    const int status = p ? ::pclose(p) : -1;
    return std::make_pair(WIFEXITED(status) ? WEXITSTATUS(status) : -1, text);
  };
  auto [code, text] = run("--target echo://127.0.0.1:9 --rate lots");
  EXPECT_EQ(code, 2) << text;
  EXPECT_NE(text.find("--rate"), std::string::npos) << text;
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 1) << text;
  std::tie(code, text) = run("--target echo://127.0.0.1:9 --rate 10 --connections many");
  EXPECT_EQ(code, 2) << text;
  EXPECT_NE(text.find("--connections"), std::string::npos) << text;
  std::tie(code, text) = run("--target echo://127.0.0.1:9 --rate 10 --bogus 1");
  EXPECT_EQ(code, 2) << text;
  EXPECT_NE(text.find("--bogus"), std::string::npos) << text;
  // Nothing listens on port 1 of loopback: a runtime failure, exit 1.
  std::tie(code, text) = run("--target echo://127.0.0.1:1 --rate 100 --max-duration 600ms");
  EXPECT_EQ(code, 1) << text;
  EXPECT_NE(text.find("cannot connect to 127.0.0.1:1"), std::string::npos) << text;
}

// --------------------------------------------------------- against nabla-tier

TEST(LoadTier, FixedServiceAnswersItsP50NearTheServiceTime) {
  ASSERT_TRUE(fs::exists(tier_binary())) << tier_binary();
  TierProcess tier = loopback_tier(8, {"/a service=fixed:1ms mode=sleep"});
  ASSERT_NE(tier.port(), 0);
  LoadOptions o = base(tier.port());
  // Target p50 (the claim under test); p99 is reported beside it. A loaded
  // VM makes latencies correlated in time, so the stride can reach 16-32 and
  // a p99 CI would need more samples than a short test collects.
  o.rate = "1000";
  o.percentiles = {"50,99"};
  o.ci_width = "200us";
  // Room for the stride to reach 1:64 (12,800 samples at 1000/s): on a
  // fresh 2-vCPU VM the series was still dependent at 1:32 (rho 0.17) in
  // both attempts of the 8 s the other runs get. A series that converges
  // earlier ends earlier.
  o.max_duration = "20s";
  // The 1 ms sleep's overshoot is a halted vCPU's wake-up, which drifts with
  // the host's load over seconds: without a CPU latency limit a VM's
  // latencies can stay correlated at 32 ms lags (CI failed here, rho 0.19
  // at 1:32, twice). A precise run holds the limit; root can.
  const bool root = ::geteuid() == 0;
  // By default (auto) root holds 0, and anyone else runs without it.
  ASSERT_EQ(o.cpu_latency_us, "auto");
  json j;
  bool quiet = false;
  for (int attempt = 0; attempt < 2; ++attempt) {  // a burst of load may pass
    j = run_json_watched(o, quiet);
    if (j["verdict"] == "ok") break;
  }
  if (machine_refused(j, quiet)) GTEST_SKIP() << "machine overloaded: " << j["reasons"].dump();
  // Under the suite's other tests a 2-vCPU VM's latencies stayed dependent
  // out to 1:64 with the client on time: the right n/a, the machine's, not
  // the client's or the service's. Such an answer still carries the
  // percentiles so far, and everything but the interval is asserted.
  const bool answered = j["verdict"] == "ok";
  if (!answered) {
    ASSERT_TRUE(only_dependence(j)) << j.dump(1);
  } else {
    EXPECT_TRUE(j["reasons"].empty());
  }
  EXPECT_EQ(j["timestamp_source"], "software");
  EXPECT_EQ(j["timestamp_note"].get<std::string>().rfind("hardware timestamps not used: lo: ", 0),
            0u);
  EXPECT_EQ(j["cpu_latency"]["limit_us"], 0) << j["cpu_latency"];
  EXPECT_EQ(j["cpu_latency"]["requested"], "auto") << j["cpu_latency"];
  EXPECT_EQ(j["cpu_latency"]["held"].get<bool>(), root) << j["cpu_latency"];
  // Released with the run: this process holds no descriptor of the device.
  // (The kernel's current limit is not compared: other tests and daemons
  // on the machine may hold one meanwhile.)
  EXPECT_FALSE(holds_cpu_latency_device());
  // p50 = 1 ms service (sleep) + loopback and timer floor.
  ASSERT_EQ(j["percentiles"].size(), 2u) << j.dump(1);
  const json& p50 = j["percentiles"][0];
  EXPECT_EQ(p50["p"], 50);
  if (answered) {
    EXPECT_LE(p50["ci_high_ns"].get<double>() - p50["ci_low_ns"].get<double>(), 200'000);
  }
  EXPECT_GE(p50["value_ns"].get<double>(), 1'000'000);
  EXPECT_LE(p50["value_ns"].get<double>(), 2'500'000);
  // X-Service-Time-Ns: the 1 ms sleep.
  ASSERT_EQ(j["service_percentiles"].size(), 2u);
  EXPECT_GE(j["service_percentiles"][0]["value_ns"].get<double>(), 1'000'000);
  EXPECT_LE(j["service_percentiles"][0]["value_ns"].get<double>(), 1'500'000);
  // Every round used carried what it was offered within 1%, and the
  // exponential-gap test of the calibration that let the run go on passed.
  for (const auto& r : j["rounds"]) {
    if (r["samples_used"] == 0) continue;  // calibration or dropped
    const double offered = r["offered_rps"].get<double>();
    EXPECT_NEAR(r["throughput_rps"].get<double>(), offered, 0.01 * offered) << r.dump();
  }
  const json* calibration = nullptr;
  for (const auto& r : j["rounds"]) {
    if (r["phase"] == "calibration") calibration = &r;
  }
  ASSERT_NE(calibration, nullptr);
  EXPECT_TRUE((*calibration)["anderson_darling"]["applied"].get<bool>());
  EXPECT_TRUE((*calibration)["anderson_darling"]["passed"].get<bool>());
  EXPECT_NEAR(j["throughput_rps"].get<double>(), 1000, 0.1 * 1000);  // Poisson count noise
}

TEST(LoadTier, HeavyTailedServiceWithATightCiIsNotApplicable) {
  TierProcess tier = loopback_tier(16, {"/a service=lognormal:300us:1.5 mode=sleep"});
  ASSERT_NE(tier.port(), 0);
  LoadOptions o = base(tier.port());
  o.rate = "400";
  o.ci_width = "5us";
  o.max_duration = "4s";
  const int64_t t0 = common::monotonic_ns();
  bool quiet = false;
  const json j = run_json_watched(o, quiet);
  EXPECT_LE(common::monotonic_ns() - t0, 7'000'000'000);
  EXPECT_EQ(j["verdict"], "n/a");
  if (!has_reason(j, "CI too wide") && machine_refused(j, quiet)) {
    GTEST_SKIP() << "machine overloaded: " << j["reasons"].dump();
  }
  // The CI is judged on measurement rounds; a run whose calibration never
  // passed within max-duration is n/a for the calibration's own reasons.
  const bool measured = std::any_of(j["rounds"].begin(), j["rounds"].end(), [](const json& r) {
    return r["phase"] == "measurement" && r["samples_used"].get<std::int64_t>() > 0;
  });
  if (!measured) {
    EXPECT_FALSE(j["reasons"].empty()) << j.dump(1);
    GTEST_SKIP() << "no measurement round within max-duration: " << j["reasons"].dump();
  }
  EXPECT_TRUE(has_reason(j, "CI too wide")) << j["reasons"].dump();
  EXPECT_FALSE(j["percentiles"].empty());
}

TEST(LoadTier, OneConnectionOneOutstandingIsReportedClosedLoop) {
  TierProcess tier = loopback_tier(2, {"/a service=fixed:2ms mode=sleep"});
  ASSERT_NE(tier.port(), 0);
  LoadOptions o = base(tier.port());
  o.rate = "2000";
  o.connections = 1;
  o.outstanding = 1;
  o.max_duration = "3s";
  const json j = run_json(o);
  EXPECT_EQ(j["verdict"], "n/a");
  EXPECT_TRUE(has_reason(j, "closed-loop: C×K=1 cannot carry 2000 rps")) << j["reasons"].dump();
  EXPECT_LT(j["throughput_rps"].get<double>(), 600);  // one slot at >= 2 ms
}

TEST(LoadTier, DbStoresTheRunTailResultsAndKeptSamples) {
  TierProcess tier =
      loopback_tier(8, {"/a service=fixed:200us mode=sleep", "/b service=fixed:400us mode=sleep"});
  ASSERT_NE(tier.port(), 0);
  const fs::path dir =
      fs::temp_directory_path() / ("nabla-load-test-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string path = (dir / "load.db").string();
  LoadOptions o = base(tier.port());
  o.mix = "/a=0.5,/b=0.5";
  o.ci_width = "1ms";
  o.max_duration = "4s";
  o.db = path;
  const json j = run_json(o);
  ASSERT_TRUE(j.contains("run_id"));
  const auto run_id = j["run_id"].get<std::int64_t>();
  EXPECT_NE(summarize_load(j).find("stored as run " + std::to_string(run_id)), std::string::npos)
      << summarize_load(j);
  {
    db::Store store = db::Store::open_read_only(path);
    const auto run = store.get_run(run_id);
    ASSERT_TRUE(run.has_value());
    EXPECT_EQ(run->kind, db::RunKind::kLoad);
    EXPECT_EQ(run->status, db::RunStatus::kComplete);
    EXPECT_EQ(json::parse(run->config_json)["target"], o.target);
    std::int64_t samples = 0;
    store.for_each_sample(run_id, [&](const db::Sample& s) {
      ++samples;
      EXPECT_TRUE(s.phase_id.has_value());  // the rate point's baseline phase
      EXPECT_GE(s.latency_ns, 200'000);
      EXPECT_EQ(s.source, db::TimestampSource::kSoftware);
    });
    EXPECT_EQ(samples, j["kept"].get<std::int64_t>());
    EXPECT_EQ(samples, j["samples_stored"].get<std::int64_t>());
    auto& database = store.database();
    auto rows = database.prepare(
        "SELECT COUNT(*), SUM(verdict = ?), SUM(type_id IS NOT NULL), SUM(metric = 'service'), "
        "SUM(metric = 'sojourn'), SUM(metric = 'response' AND type_id IS NULL) "
        "FROM tail_results WHERE run_id = ?");
    rows.bind(1, j["verdict"].get<std::string>());
    rows.bind(2, run_id);
    ASSERT_TRUE(rows.step());
    // One row per percentile: response (the answer), sojourn and service
    // overall, then response per type (/a and /b) when the measurement got
    // that far.
    std::size_t per_type = 0;
    for (const auto& t : j["per_type"]) per_type += t["percentiles"].size();
    const auto expected = j["percentiles"].size() + j["sojourn_percentiles"].size() +
                          j["service_percentiles"].size() + per_type;
    EXPECT_GE(expected, 2u);
    EXPECT_EQ(rows.column_int64(0), static_cast<std::int64_t>(expected));
    EXPECT_EQ(rows.column_int64(1), static_cast<std::int64_t>(expected));
    EXPECT_EQ(rows.column_int64(2), static_cast<std::int64_t>(per_type));
    EXPECT_EQ(rows.column_int64(3), static_cast<std::int64_t>(j["service_percentiles"].size()));
    EXPECT_EQ(rows.column_int64(4), static_cast<std::int64_t>(j["sojourn_percentiles"].size()));
    EXPECT_EQ(rows.column_int64(5), static_cast<std::int64_t>(j["percentiles"].size()));
    if (j["verdict"] == "ok") {
      EXPECT_EQ(per_type, 4u);  // p99 and p50 of /a and /b
    }
    // The controller's checks as --json printed them, in its order.
    const auto checks = db::run_load_checks(database, run_id);
    ASSERT_EQ(checks.size(), j["checks"].size());
    ASSERT_EQ(checks.size(), 7u);
    for (std::size_t i = 0; i < checks.size(); ++i) {
      EXPECT_EQ(checks[i].name, j["checks"][i]["name"]);
      EXPECT_EQ(checks[i].outcome, j["checks"][i]["outcome"]);
      EXPECT_EQ(checks[i].position, static_cast<std::int64_t>(i));
      EXPECT_EQ(checks[i].rate_rps, j["target_rps"].get<double>());
    }
  }
  fs::remove_all(dir);
}

// The rate point's checks from the controller's decisions: the four round
// conditions from the last round, with in how many rounds each failed; iid,
// ADF and the CI width from the series, with their numbers.
TEST(LoadChecks, EachCheckCarriesItsOutcomeAndNumbers) {
  loadgen::ControllerConfig c;
  c.ci_width_ns = 50'000;
  loadgen::ControllerResult r;
  r.target_rps = 2000;
  for (int i = 0; i < 3; ++i) {
    loadgen::RoundRecord round;
    round.index = i;
    round.calibration = i == 0;
    round.completed = 1990;
    round.check.offered_rps = 2000;
    round.check.throughput_rps = i == 1 ? 1900 : 1990;
    round.check.rate_ok = i != 1;
    round.check.sent = 2000;
    round.check.late = 4;
    round.check.late_fraction = 0.002;
    round.check.ad = {true, true, 0.7, 1.957, 1500, 60'000, ""};
    round.check.closed_loop.slots = 64;
    round.check.closed_loop.slots_needed = 1.2;
    round.check.closed_loop.mean_in_flight_ns = 600'000;
    r.rounds.push_back(round);
  }
  r.samples = 20'000;
  r.kept = 5000;
  r.stride = 4;
  r.stride_scan.stride = 4;
  r.stride_scan.steps = {{1, 20'000, 0.3, 0.0}, {2, 10'000, 0.1, 0.01}, {4, 5000, 0.01, 0.48}};
  r.stationarity = {true, true, -9.5, 0.0001, 3, ""};
  r.percentiles = {{99, 400'000, 380'000, 460'000}, {50, 200'000, 198'000, 203'000}};

  const auto checks = load_checks(r, c);
  ASSERT_EQ(checks.size(), 7u);
  for (std::size_t i = 0; i < checks.size(); ++i) {
    EXPECT_EQ(checks[i].rate_rps, 2000);
    EXPECT_EQ(checks[i].position, static_cast<std::int64_t>(i));
  }
  EXPECT_EQ(checks[0].name, "rate reached");
  EXPECT_EQ(checks[0].outcome, "pass");
  EXPECT_DOUBLE_EQ(*checks[0].statistic, -0.005);
  EXPECT_EQ(checks[0].threshold, 0.02);
  EXPECT_NE(checks[0].detail.find("failed in 1 of 3 rounds"), std::string::npos)
      << checks[0].detail;
  EXPECT_EQ(checks[1].outcome, "pass");
  EXPECT_EQ(checks[1].statistic, 0.7);
  EXPECT_EQ(checks[1].threshold, 1.957);
  EXPECT_EQ(checks[1].samples, 1500);
  EXPECT_EQ(checks[2].name, "late sends");
  EXPECT_EQ(checks[2].statistic, 0.002);
  EXPECT_EQ(checks[2].samples, 2000);
  EXPECT_EQ(checks[3].outcome, "pass");  // 1.2 slots of 0.7 x 64
  EXPECT_DOUBLE_EQ(*checks[3].threshold, 0.7 * 64);
  EXPECT_EQ(checks[4].name, "iid (lag-1 Spearman)");
  EXPECT_EQ(checks[4].outcome, "pass");
  EXPECT_EQ(checks[4].statistic, 0.01);
  EXPECT_EQ(checks[4].p_value, 0.48);
  EXPECT_EQ(checks[4].samples, 5000);
  EXPECT_EQ(checks[5].outcome, "pass");
  EXPECT_EQ(checks[5].statistic, -9.5);
  EXPECT_EQ(checks[5].p_value, 0.0001);
  EXPECT_EQ(checks[6].name, "CI width (p99)");
  EXPECT_EQ(checks[6].outcome, "fail");  // 80 us of 50 us asked
  EXPECT_EQ(checks[6].statistic, 80'000);
  EXPECT_EQ(checks[6].threshold, 50'000);

  // No measurement round used: the series' checks were not applied.
  r.samples = 0;
  const auto calibration_only = load_checks(r, c);
  for (std::size_t i = 4; i < 7; ++i) {
    EXPECT_EQ(calibration_only[i].outcome, "not applied") << calibration_only[i].name;
    EXPECT_FALSE(calibration_only[i].statistic) << calibration_only[i].name;
  }
}

// A sweep prints one JSON point per rate and stores every point: its tail
// results at its own rate and its samples under its own phase.
TEST(LoadEcho, SweepReportsAndStoresEveryPoint) {
  tier::EchoServer server({.delay_ns = 100'000});
  const fs::path dir =
      fs::temp_directory_path() / ("nabla-load-sweep-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  LoadOptions o;
  o.target = "echo://127.0.0.1:" + std::to_string(server.port());
  o.sweep = "200:400:2";
  o.connections = 2;
  o.max_duration = "1s";
  o.late_threshold = "1ms";
  o.json = true;
  o.db = (dir / "sweep.db").string();
  const json j = run_json(o);
  ASSERT_EQ(j["sweep"].size(), 2u);
  EXPECT_EQ(j["sweep"][0]["target_rps"], 200.0);
  EXPECT_EQ(j["sweep"][1]["target_rps"], 400.0);
  for (const auto& p : j["sweep"]) {
    EXPECT_TRUE(p["verdict"] == "ok" || p["verdict"] == "n/a");
    EXPECT_FALSE(p["percentiles"].empty());  // even n/a carries what was measured
    EXPECT_EQ(p["timestamp_source"], "software");
  }
  {
    db::Store store = db::Store::open_read_only(o.db);
    auto rates = store.database().prepare(
        "SELECT COUNT(DISTINCT rate_rps), COUNT(DISTINCT s.phase_id) FROM tail_results t "
        "JOIN samples s ON s.run_id = t.run_id WHERE t.run_id = ?");
    rates.bind(1, j["sweep"][0]["run_id"].get<std::int64_t>());
    ASSERT_TRUE(rates.step());
    EXPECT_EQ(rates.column_int64(0), 2);
    EXPECT_EQ(rates.column_int64(1), 2);
  }
  // `nabla demo` tells this output with the run it was stored in: inside
  // each point, not beside the sweep.
  EXPECT_NE(summarize_load(j).find("\n    stored as run " + j["sweep"][0]["run_id"].dump()),
            std::string::npos)
      << summarize_load(j);
  fs::remove_all(dir);
}

// sockperf://: nabla load speaks sockperf's ping-pong frames to a real
// `sockperf server` (installed by scripts/install-deps.sh), every request
// answered and matched by its sequence number.
TEST(LoadSockperf, ARealSockperfServerAnswersEveryRequest) {
  const uint16_t port = free_loopback_port();
  ASSERT_NE(port, 0);
  const fs::path log =
      fs::temp_directory_path() / ("nabla-load-sockperf-" + std::to_string(::getpid()) + ".log");
  common::ChildProcess server(
      {"sockperf", "server", "--tcp", "-i", "127.0.0.1", "-p", std::to_string(port)}, nullptr,
      log.string());
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!loopback_accepts(port) && std::chrono::steady_clock::now() < deadline) {
    ASSERT_TRUE(server.running()) << "sockperf server exited (scripts/install-deps.sh installs it)";
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_TRUE(loopback_accepts(port)) << "sockperf server is not listening on port " << port;
  LoadOptions o;
  o.target = "sockperf://127.0.0.1:" + std::to_string(port);
  o.rate = "500";
  o.percentiles = {"50"};
  o.max_duration = "1500ms";
  o.late_threshold = "1ms";
  o.json = true;
  const json j = run_json(o);
  for (const auto& [kind, n] : j["errors"].items()) EXPECT_EQ(n, 0) << kind;
  // How long the controller runs is its own decision (rate, AD and CI
  // checks); every request it sent was answered and matched.
  EXPECT_GT(j["sent"].get<int>(), 200);
  EXPECT_GT(j["samples"].get<int>(), 100);
  EXPECT_EQ(j["timestamp_source"], "software");
  // A loopback round trip through a blocking server: well under 10 ms.
  ASSERT_FALSE(j["percentiles"].empty());
  EXPECT_GT(j["percentiles"][0]["value_ns"].get<double>(), 0);
  EXPECT_LT(j["percentiles"][0]["value_ns"].get<double>(), 10e6);
  server.signal(SIGTERM);
  server.wait(std::chrono::seconds(5));
  fs::remove(log);
}

// SIGTERM mid-run (the demo's way to stop it): the stored run is marked
// failed with the signal named, and the exit code is 1.
TEST(LoadTier, SigtermMarksTheStoredRunFailed) {
  TierProcess tier = loopback_tier(4, {"/a service=fixed:100us mode=sleep"});
  ASSERT_NE(tier.port(), 0);
  const fs::path dir =
      fs::temp_directory_path() / ("nabla-load-sigterm-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string db_path = (dir / "load.db").string();
  const std::string target = "http://127.0.0.1:" + std::to_string(tier.port()) + "/a";
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int null = ::open("/dev/null", O_WRONLY);
    ::dup2(null, STDOUT_FILENO);
    ::dup2(null, STDERR_FILENO);
    ::execl(NABLA_BINARY, NABLA_BINARY, "load", "--target", target.c_str(), "--rate", "300",
            "--max-duration", "20s", "--late-threshold", "5ms", "--db", db_path.c_str(),
            static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ASSERT_GT(pid, 0);
  // The run row is written before the first round, and a round lasts at
  // least 200 ms: signalled as soon as the row is there, the run is
  // mid-round however slow this machine is.
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(15);
  bool started = false;
  while (!started && std::chrono::steady_clock::now() < give_up) {
    try {
      started = db::Store::open_read_only(db_path).list_runs().size() == 1;
    } catch (const std::exception&) {  // not created (or not migrated) yet
    }
    if (!started) ::usleep(10'000);
  }
  ::kill(pid, SIGTERM);
  ASSERT_TRUE(started) << "nabla load never stored its run";
  int status = 0;
  ::waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status)) << "killed by the signal instead of ending cleanly";
  EXPECT_EQ(WEXITSTATUS(status), 1);
  {
    db::Store store = db::Store::open_read_only(db_path);
    const auto runs = store.list_runs();
    ASSERT_EQ(runs.size(), 1u);
    EXPECT_EQ(runs[0].status, db::RunStatus::kFailed);
    ASSERT_TRUE(runs[0].error.has_value());
    EXPECT_EQ(runs[0].error->rfind("interrupted by SIGTERM", 0), 0u) << *runs[0].error;
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace nabla::coordinator
