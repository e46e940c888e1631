// `nabla inject`'s fault flags: the iproute2 units and words parsed to the
// inject.start request, the waveform shared by the delay and every fault,
// trace files, and the one-line usage errors of the binary (exit 2, naming
// the flag), checked without a daemon through --dry-run.
#include "nabla/coordinator/fault_flags.hh"

#include <gtest/gtest.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "nabla/common/netns.hh"
#include "nabla/coordinator/inject_command.hh"

namespace nabla::coordinator {
namespace {

namespace protocol = common::protocol;
using protocol::WaveKind;

// The message of the std::invalid_argument `f` throws ("" when none).
template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

TEST(FaultFlags, RatesInIproute2Units) {
  // bps is bytes per second, as in tc; units are case-insensitive.
  const std::vector<std::pair<const char*, double>> rates = {
      {"10mbit", 10e6}, {"10Mbit", 10e6},    {"1.5gbit", 1.5e9}, {"100kbit", 100e3},
      {"2000bit", 2e3}, {"1mibit", 1048576}, {"1kibit", 1024},   {"1000bps", 8000},
      {"1mbps", 8e6},   {"1MBps", 8e6},      {"1kibps", 8192},   {"1tbit", 1e12}};
  for (const auto& [text, bps] : rates) EXPECT_DOUBLE_EQ(parse_rate_bps(text), bps) << text;
  for (const char* bad : {"10", "10mb", "fast", "-1mbit", "mbit", "10 furlongs", "100bit"}) {
    SCOPED_TRACE(bad);
    const std::string e = error_of([&] { parse_rate_bps(bad); });
    EXPECT_EQ(e.rfind("--rate: ", 0), 0u) << e;
  }
  EXPECT_NE(error_of([] { parse_rate_bps("10"); }).find("kbit"), std::string::npos);
}

TEST(FaultFlags, SizesInIproute2Units) {
  EXPECT_EQ(parse_size_bytes("1500"), 1500);
  EXPECT_EQ(parse_size_bytes("1500b"), 1500);
  EXPECT_EQ(parse_size_bytes("32kb"), 32 * 1024);
  EXPECT_EQ(parse_size_bytes("32k"), 32 * 1024);
  EXPECT_EQ(parse_size_bytes("2mb"), 2 * 1048576);
  EXPECT_EQ(parse_size_bytes("1m"), 1048576);
  EXPECT_EQ(parse_size_bytes("8kbit"), 1024);
  for (const char* bad : {"lots", "32kib", "-5", "2tb"}) {
    SCOPED_TRACE(bad);
    EXPECT_EQ(error_of([&] { parse_size_bytes(bad); }).rfind("--burst: ", 0), 0u);
  }
}

TEST(FaultFlags, LossIsBernoulliOrNetemsGilbertElliott) {
  const protocol::LossFault bernoulli = parse_loss_flag("5%");
  EXPECT_EQ(bernoulli.model, protocol::LossModel::kBernoulli);
  EXPECT_DOUBLE_EQ(bernoulli.p, 0.05);

  const protocol::LossFault p_only = parse_loss_flag("gemodel:1%");
  EXPECT_EQ(p_only.model, protocol::LossModel::kGilbertElliott);
  EXPECT_DOUBLE_EQ(p_only.p, 0.01);
  EXPECT_DOUBLE_EQ(p_only.r, 1.0);
  EXPECT_DOUBLE_EQ(p_only.one_minus_h, 1.0);
  EXPECT_DOUBLE_EQ(p_only.one_minus_k, 0.0);

  const protocol::LossFault all = parse_loss_flag("gemodel:1%,25%,80%,0.5%");
  EXPECT_DOUBLE_EQ(all.p, 0.01);
  EXPECT_DOUBLE_EQ(all.r, 0.25);
  EXPECT_DOUBLE_EQ(all.one_minus_h, 0.8);
  EXPECT_DOUBLE_EQ(all.one_minus_k, 0.005);

  for (const char* bad : {"5", "150%", "gemodel:", "gemodel:1%,2%,3%,4%,5%", "gemodel:x",
                          "state:1%", "gemodel:1%,0.3"}) {
    SCOPED_TRACE(bad);
    EXPECT_EQ(error_of([&] { parse_loss_flag(bad); }).rfind("--loss: ", 0), 0u);
  }
}

TEST(FaultFlags, WaveForms) {
  const WaveFlag square = parse_wave_flag("square:2s,0.25");
  EXPECT_EQ(square.kind, WaveKind::kSquare);
  EXPECT_EQ(square.period_ns, 2'000'000'000);
  EXPECT_DOUBLE_EQ(square.duty, 0.25);
  EXPECT_DOUBLE_EQ(parse_wave_flag("square:100ms").duty, 0.5);
  const WaveFlag sine = parse_wave_flag("sine:500ms");
  EXPECT_EQ(sine.kind, WaveKind::kSine);
  EXPECT_EQ(sine.period_ns, 500'000'000);
  const WaveFlag trace = parse_wave_flag("trace:/tmp/a,b.csv,once,step");
  EXPECT_EQ(trace.kind, WaveKind::kTrace);
  EXPECT_EQ(trace.trace_file, "/tmp/a,b.csv");
  EXPECT_FALSE(trace.trace_loop);
  EXPECT_EQ(trace.interpolation, protocol::TraceInterpolation::kStep);
  const WaveFlag looped = parse_wave_flag("trace:rtt.csv");
  EXPECT_TRUE(looped.trace_loop);
  EXPECT_EQ(looped.interpolation, protocol::TraceInterpolation::kLinear);
  for (const char* bad : {"sine", "triangle:1s", "sine:1s,0.5", "square:1s,1.5", "square:0.5us",
                          "square:2h", "sine:fast", "trace:", "trace:,once"}) {
    SCOPED_TRACE(bad);
    EXPECT_EQ(error_of([&] { parse_wave_flag(bad); }).rfind("--wave: ", 0), 0u);
  }
}

TEST(FaultFlags, TraceCsvRowsAreRelativeAndValidated) {
  const auto points =
      parse_trace_csv("# an RTT log\nt_offset,value\n10,0\n10.5,0.5\r\n\n12, 1\n12.25s,0.2\n");
  ASSERT_EQ(points.size(), 4u);
  EXPECT_EQ(points[0].t_ns, 0);
  EXPECT_EQ(points[1].t_ns, 500'000'000);
  EXPECT_DOUBLE_EQ(points[1].level, 0.5);
  EXPECT_EQ(points[2].t_ns, 2'000'000'000);
  EXPECT_EQ(points[3].t_ns, 2'250'000'000);
  EXPECT_DOUBLE_EQ(points[3].level, 0.2);
  EXPECT_EQ(parse_trace_csv("0,0\n200ms,1\n")[1].t_ns, 200'000'000);

  const std::map<std::string, std::string> bad = {
      {"0,0\n", "at least 2"},      {"0,0\n1,1.5\n", "line 2"},
      {"0,0\n1,0.5,7\n", "line 2"}, {"0,0\n1,0.5\n1,0.7\n", "line 3"},
      {"0,0\n0.5,x\n", "line 2"},   {"0,0\n5000,1\n", "line 2"},
      {"0,0\nsoon,1\n", "line 2"},  {"time,level\n0,0\n-1,1\n", "line 3"},
  };
  for (const auto& [csv, where] : bad) {
    SCOPED_TRACE(csv);
    const std::string e = error_of([&] { parse_trace_csv(csv); });
    EXPECT_EQ(e.rfind("--wave: ", 0), 0u) << e;
    EXPECT_NE(e.find(where), std::string::npos) << e;
  }
  std::string many = "0,0\n";
  for (size_t i = 1; i <= protocol::kMaxTracePoints; ++i) many += std::to_string(i) + "ms,1\n";
  EXPECT_NE(error_of([&] { parse_trace_csv(many); }).find("more than"), std::string::npos);
}

FaultRequest request(const FaultFlags& flags, const std::string& trace_text = "") {
  return build_fault_request(flags, [&](const std::string&) { return trace_text; });
}

// The flags as `nabla inject` registers them, parsed from `args`.
FaultFlags parsed(std::vector<std::string> args) {
  CLI::App app;
  FaultFlags f;
  register_fault_flags(app, f);
  std::reverse(args.begin(), args.end());  // CLI11 takes them last first
  app.parse(args);
  return f;
}

TEST(FaultFlags, EveryFaultAtOnce) {
  const FaultFlags f = parsed({"--delay",
                               "10ms",
                               "--jitter",
                               "1ms",
                               "--jitter-dist",
                               "paretonormal",
                               "--jitter-correlation",
                               "25%",
                               "--loss",
                               "gemodel:1%,30%",
                               "--reorder",
                               "10%",
                               "--reorder-gap",
                               "5",
                               "--corrupt",
                               "0.1%",
                               "--corrupt-fix-checksum",
                               "--duplicate",
                               "1%",
                               "--rate",
                               "10mbit",
                               "--burst",
                               "32kb",
                               "--partition"});
  const FaultRequest r = request(f);
  ASSERT_TRUE(r.delay);
  EXPECT_EQ(*r.delay, protocol::Wave::constant(10'000'000));
  const protocol::Faults& x = r.faults;
  ASSERT_TRUE(x.jitter && x.loss && x.reorder && x.corrupt && x.duplicate && x.rate_limit &&
              x.partition);
  EXPECT_EQ(x.jitter->amount_ns, 1'000'000);
  EXPECT_EQ(x.jitter->distribution, protocol::JitterDistribution::kParetoNormal);
  EXPECT_DOUBLE_EQ(x.jitter->correlation, 0.25);
  EXPECT_DOUBLE_EQ(x.loss->r, 0.3);
  EXPECT_DOUBLE_EQ(x.reorder->probability, 0.1);
  EXPECT_EQ(x.reorder->gap, 5);
  EXPECT_DOUBLE_EQ(x.corrupt->probability, 0.001);
  EXPECT_TRUE(x.corrupt->fix_checksum);
  EXPECT_DOUBLE_EQ(x.duplicate->probability, 0.01);
  EXPECT_DOUBLE_EQ(x.rate_limit->rate_bps, 10e6);
  EXPECT_EQ(x.rate_limit->burst_bytes, 32 * 1024);
  EXPECT_FALSE(x.loss->wave);  // no wave: constant
  // The request is one the daemon's own reader accepts unchanged.
  EXPECT_EQ(protocol::Faults::from_json(x.to_json()), x);
}

TEST(FaultFlags, CorruptionLeavesTheChecksumBadUnlessAsked) {
  EXPECT_FALSE(request(parsed({"--corrupt", "1%"})).faults.corrupt->fix_checksum);
}

TEST(FaultFlags, OneWaveShapesTheDelayAndEveryFault) {
  FaultFlags f =
      parsed({"--delay", "10ms", "--loss", "5%", "--rate", "1mbit", "--wave", "sine:2s"});
  const FaultRequest r = request(f);
  EXPECT_EQ(*r.delay, protocol::Wave::sine(10'000'000, 2'000'000'000));
  EXPECT_EQ(*r.faults.loss->wave, protocol::Wave::sine(0, 2'000'000'000));
  EXPECT_EQ(*r.faults.rate_limit->wave, protocol::Wave::sine(0, 2'000'000'000));

  f.wave = "trace:rtt.csv,once,step";
  const FaultRequest t = request(f, "0,1\n1s,0.5\n3s,0\n");
  ASSERT_TRUE(t.delay);
  EXPECT_EQ(t.delay->kind, WaveKind::kTrace);
  EXPECT_EQ(t.delay->amplitude_ns, 10'000'000);
  EXPECT_FALSE(t.delay->trace_loop);
  EXPECT_EQ(t.delay->interpolation, protocol::TraceInterpolation::kStep);
  ASSERT_EQ(t.delay->trace.size(), 3u);
  EXPECT_EQ(t.faults.loss->wave->trace, t.delay->trace);
  // The wire form round-trips through the daemon's reader.
  EXPECT_EQ(protocol::Wave::from_json(t.delay->to_json(), "delay"), *t.delay);

  // --square-period is --wave square: with --duty, for faults too.
  const FaultFlags s =
      parsed({"--delay", "5ms", "--loss", "1%", "--square-period", "1s", "--duty", "0.25"});
  const FaultRequest q = request(s);
  EXPECT_EQ(*q.delay, protocol::Wave::square(5'000'000, 1'000'000'000, 0.25));
  EXPECT_EQ(*q.faults.loss->wave, protocol::Wave::square(0, 1'000'000'000, 0.25));
}

TEST(FaultFlags, RefinementsNeedTheirFault) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--jitter-dist", "normal"}, "--jitter-dist: needs --jitter"},
      {{"--jitter-correlation", "5%"}, "--jitter-correlation: needs --jitter"},
      {{"--reorder-gap", "3"}, "--reorder-gap: needs --reorder"},
      {{"--reorder", "5%"}, "--reorder: needs --delay"},
      {{"--corrupt-fix-checksum"}, "--corrupt-fix-checksum: needs"},
      {{"--burst", "1kb"}, "--burst: needs --rate"},
      {{"--wave", "sine:1s"}, "--wave: needs --delay or a fault"},
      {{"--delay", "1ms", "--wave", "sine:1s", "--square-period", "1s"},
       "--square-period: give either"},
      {{"--jitter", "1ms", "--jitter-dist", "cauchy"},
       "--jitter-dist: must be uniform|normal|pareto|paretonormal"},
      {{"--jitter", "1ms", "--jitter-correlation", "100%"},
       "--jitter-correlation: must be at most"},
      {{"--delay", "1ms", "--reorder", "5%", "--reorder-gap", "0"}, "--reorder-gap: must be"},
      {{"--delay", "2m"}, "--delay: must be at most 60s"},
      {{"--duplicate", "1"}, "--duplicate: "},
  };
  for (const auto& [args, message] : cases) {
    const FaultFlags f = parsed(args);
    const std::string e = error_of([&] { request(f); });
    EXPECT_EQ(e.rfind(message, 0), 0u) << e;
  }
  // Every flag reaches its field.
  const FaultFlags all =
      parsed({"--delay", "1ms", "--partition", "--rate", "1mbit", "--burst", "2k", "--corrupt",
              "1%", "--corrupt-fix-checksum", "--duplicate", "2%", "--loss", "3%"});
  const FaultRequest r = request(all);
  EXPECT_TRUE(r.faults.partition && r.faults.corrupt->fix_checksum);
  EXPECT_EQ(r.faults.rate_limit->burst_bytes, 2048);
  EXPECT_DOUBLE_EQ(r.faults.duplicate->probability, 0.02);
  EXPECT_DOUBLE_EQ(r.faults.loss->p, 0.03);
}

// The binary: --dry-run prints the request without a daemon, and a bad
// value is one line naming the flag, exit 2.
common::CommandResult nabla_inject(std::vector<std::string> flags) {
  std::vector<std::string> args = {NABLA_BINARY,  "inject", "--node",
                                   "127.0.0.1:1", "--link", "udp 10.0.0.1 -> 10.0.0.2:9000"};
  args.insert(args.end(), flags.begin(), flags.end());
  return common::run_command(args);
}

TEST(FaultFlags, DryRunPrintsTheRequestAndSendsNothing) {
  const common::CommandResult r =
      nabla_inject({"--delay", "10ms", "--wave", "sine:2s", "--loss", "gemodel:1%,25%", "--rate",
                    "10mbit", "--burst", "32kb", "--seed", "7", "--dry-run"});
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  const nlohmann::json request = nlohmann::json::parse(r.stdout_text);
  EXPECT_EQ(request.at("method"), "inject.start");
  const auto params = protocol::InjectStartParams::from_json(request.at("params"));
  EXPECT_EQ(params.settings.delay->kind, WaveKind::kSine);
  EXPECT_EQ(params.settings.faults.loss->model, protocol::LossModel::kGilbertElliott);
  EXPECT_EQ(params.settings.faults.rate_limit->burst_bytes, 32 * 1024);
  EXPECT_EQ(params.settings.seed, 7u);
  EXPECT_EQ(params.release, protocol::Release::kSpin);
}

TEST(FaultFlags, ReleaseSleepIsSentWhenAsked) {
  const common::CommandResult r = nabla_inject({"--delay", "2ms", "--release", "sleep", "--dry-run"});
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  const nlohmann::json request = nlohmann::json::parse(r.stdout_text);
  EXPECT_EQ(request.at("params").at("release"), "sleep");
}

TEST(FaultFlags, BadValuesAreOneLineNamingTheFlagExitTwo) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--rate", "10"}, "--rate"},
      {{"--loss", "gemodel:5"}, "--loss"},
      {{"--delay", "1ms", "--wave", "saw:1s"}, "--wave"},
      {{"--delay", "1ms", "--wave", "trace:/nonexistent/rtt.csv"}, "--wave"},
      {{"--jitter", "1ms", "--jitter-dist", "cauchy"}, "--jitter-dist"},
      {{"--rate", "1mbit", "--burst", "huge"}, "--burst"},
      {{"--delay", "1ms", "--reorder", "10%", "--reorder-gap", "x"}, "--reorder-gap"},
      {{"--delay", "1ms", "--release", "fast"}, "--release"},
  };
  for (auto [flags, flag] : cases) {
    flags.push_back("--dry-run");
    const common::CommandResult r = nabla_inject(flags);
    EXPECT_EQ(r.exit_code, 2) << flag << ": " << r.stderr_text;
    EXPECT_TRUE(r.stdout_text.empty());
    EXPECT_EQ(r.stderr_text.rfind("nabla inject: ", 0), 0u) << r.stderr_text;
    EXPECT_NE(r.stderr_text.find(flag), std::string::npos) << r.stderr_text;
    EXPECT_LE(std::count(r.stderr_text.begin(), r.stderr_text.end(), '\n'), 2) << r.stderr_text;
  }
}

}  // namespace
}  // namespace nabla::coordinator
