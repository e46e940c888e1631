// The JSON forms that cross between the controller and a load agent
// (wire.hh): every codec round-trips exactly (also through text), and a bad
// message is refused with the path of the key at fault.
#include "nabla/loadgen/wire.hh"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>

#include "nabla/loadgen/controller_checks.hh"
#include "rounds_test_support.hh"

namespace nabla::loadgen {
namespace {

using nlohmann::json;

// Through text too, as the agent's frames carry it.
json through_text(const json& j) {
  return json::parse(j.dump());
}

// The message of the std::invalid_argument `f` throws ("" when none).
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

EngineConfig every_field_set() {
  EngineConfig c;
  c.host = "fd00::2";
  c.port = 8443;
  c.tls.enabled = true;
  c.tls.server_name = "svc.example";
  c.tls.ca_file = "/etc/nabla/ca.pem";
  c.tls.verify = false;
  c.tls.resume_sessions = false;
  c.threads = 3;
  c.connections = 12;
  c.max_outstanding = 7;
  c.schedule.kind = ScheduleKind::kLognormal;
  c.schedule.rate_per_s = 1234.567891234;
  c.schedule.lognormal_sigma = 0.7;
  c.schedule.uniform_spread = 0.3;
  c.schedule.trace_ns = {-5, 2, 2, 1'000'000'000'000};
  c.schedule.trace_origin_ns = -5;
  c.protocol.kind = ProtocolSpec::Kind::kGrpc;
  c.protocol.urls = {{"/a", 0.25}, {"/b?x=1", 3}};
  c.protocol.host_header = "svc.example:8443";
  c.protocol.scheme = "https";
  c.protocol.grpc_calls = {{"/pkg.Svc/Get", std::string("\x00\xff\x10 a", 5), 1.5},
                           {"/pkg.Svc/Put", "", 0.5},
                           {"/pkg.Svc/Big", std::string(1000, '\xab'), 2}};
  c.protocol.echo_payload_bytes = 99;
  c.protocol.keys = 77;
  c.protocol.key_distribution = KeyDistribution::kZipf;
  c.protocol.zipf_s = 1.2;
  c.protocol.get_ratio = 0.3;
  c.protocol.value_bytes = 64;
  c.max_requests = 5;
  c.duration_ns = 7'000'000'001;
  c.request_timeout_ns = 3'000'000'000;
  c.late_threshold_ns = 123;
  c.record_samples = false;
  c.seed = (uint64_t{1} << 63) + 5;
  // The agent's own host settings: never sent.
  c.cpus = {1};
  c.rt_priority = 10;
  c.spin_ns = 1000;
  c.busy_poll_us = 50;
  c.software_rx_timestamps = true;
  c.phc_index = 2;
  return c;
}

TEST(WireEngine, EveryWorkloadFieldRoundTrips) {
  const EngineConfig c = every_field_set();
  const json j = engine_config_to_json(c);
  const EngineConfig b = engine_config_from_json(through_text(j));
  EXPECT_EQ(engine_config_to_json(b), j);
  EXPECT_EQ(b.host, c.host);
  EXPECT_EQ(b.port, c.port);
  EXPECT_TRUE(b.tls.enabled);
  EXPECT_EQ(b.tls.server_name, c.tls.server_name);
  EXPECT_EQ(b.tls.ca_file, c.tls.ca_file);
  EXPECT_FALSE(b.tls.verify);
  EXPECT_FALSE(b.tls.resume_sessions);
  EXPECT_EQ(b.threads, 3);
  EXPECT_EQ(b.connections, 12);
  EXPECT_EQ(b.max_outstanding, 7);
  EXPECT_EQ(b.schedule.kind, ScheduleKind::kLognormal);
  EXPECT_EQ(b.schedule.rate_per_s, c.schedule.rate_per_s);  // exact
  EXPECT_EQ(b.schedule.lognormal_sigma, 0.7);
  EXPECT_EQ(b.schedule.uniform_spread, 0.3);
  EXPECT_EQ(b.schedule.trace_ns, c.schedule.trace_ns);
  EXPECT_EQ(b.schedule.trace_origin_ns, -5);
  EXPECT_EQ(b.protocol.kind, ProtocolSpec::Kind::kGrpc);
  ASSERT_EQ(b.protocol.urls.size(), 2u);
  EXPECT_EQ(b.protocol.urls[1].path, "/b?x=1");
  EXPECT_EQ(b.protocol.urls[0].weight, 0.25);
  EXPECT_EQ(b.protocol.host_header, c.protocol.host_header);
  EXPECT_EQ(b.protocol.scheme, "https");
  ASSERT_EQ(b.protocol.grpc_calls.size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(b.protocol.grpc_calls[i].method, c.protocol.grpc_calls[i].method);
    EXPECT_EQ(b.protocol.grpc_calls[i].message, c.protocol.grpc_calls[i].message);
    EXPECT_EQ(b.protocol.grpc_calls[i].weight, c.protocol.grpc_calls[i].weight);
  }
  EXPECT_EQ(b.protocol.echo_payload_bytes, 99u);
  EXPECT_EQ(b.protocol.keys, 77u);
  EXPECT_EQ(b.protocol.key_distribution, KeyDistribution::kZipf);
  EXPECT_EQ(b.protocol.zipf_s, 1.2);
  EXPECT_EQ(b.protocol.get_ratio, 0.3);
  EXPECT_EQ(b.protocol.value_bytes, 64u);
  EXPECT_EQ(b.max_requests, 5u);
  EXPECT_EQ(b.duration_ns, 7'000'000'001);
  EXPECT_EQ(b.request_timeout_ns, 3'000'000'000);
  EXPECT_EQ(b.late_threshold_ns, 123);
  EXPECT_FALSE(b.record_samples);
  EXPECT_EQ(b.seed, c.seed);
  // Host settings stay the agent's.
  EXPECT_TRUE(b.cpus.empty());
  EXPECT_EQ(b.rt_priority, 0);
  EXPECT_FALSE(b.spin_ns);
  EXPECT_EQ(b.busy_poll_us, 0);
  EXPECT_FALSE(b.software_rx_timestamps);
  EXPECT_EQ(b.phc_index, -1);
  for (const char* key :
       {"cpus", "rt_priority", "spin_ns", "phc_index", "stop", "slice_ns", "busy_poll_us"}) {
    EXPECT_FALSE(j.contains(key)) << key;
  }
}

TEST(WireEngine, DefaultsAndEveryMessageLengthRoundTrip) {
  EngineConfig c;
  c.port = 80;
  EXPECT_EQ(engine_config_to_json(engine_config_from_json(engine_config_to_json(c))),
            engine_config_to_json(c));
  // Base64 of every padding case, bytes of every value.
  std::mt19937_64 rng(3);
  for (std::size_t n = 0; n < 40; ++n) {
    std::string msg(n, '\0');
    for (auto& ch : msg) ch = static_cast<char>(rng() & 0xff);
    c.protocol.grpc_calls = {{"/m", msg, 1}};
    EXPECT_EQ(engine_config_from_json(through_text(engine_config_to_json(c)))
                  .protocol.grpc_calls.front()
                  .message,
              msg)
        << n;
  }
}

TEST(WireEngine, BadValuesAndUnknownKeysAreNamed) {
  const json good = engine_config_to_json(every_field_set());
  auto with = [&](const json::json_pointer& ptr, const json& v) {
    json j = good;
    j[ptr] = v;
    return error_of([&] { engine_config_from_json(j); });
  };
  EXPECT_EQ(with("/cpus"_json_pointer, json::array({1})), "engine.cpus: unknown field");
  EXPECT_EQ(with("/tls/sni"_json_pointer, "x"), "engine.tls.sni: unknown field");
  EXPECT_EQ(with("/connections"_json_pointer, 0), "engine.connections: must be 1 .. 65536");
  EXPECT_EQ(with("/connections"_json_pointer, 70000), "engine.connections: must be 1 .. 65536");
  EXPECT_EQ(with("/connections"_json_pointer, 2), "engine.connections: must be >= threads");
  EXPECT_EQ(with("/port"_json_pointer, "80"), "engine.port: must be an integer >= 0");
  EXPECT_EQ(with("/port"_json_pointer, 0), "engine.port: must be 1 .. 65535");
  EXPECT_EQ(with("/threads"_json_pointer, 1.5), "engine.threads: must be an integer >= 0");
  EXPECT_EQ(with("/seed"_json_pointer, -1), "engine.seed: must be an integer >= 0");
  EXPECT_EQ(with("/record_samples"_json_pointer, 1),
            "engine.record_samples: must be true or false");
  EXPECT_EQ(with("/request_timeout_ns"_json_pointer, 0), "engine.request_timeout_ns: must be > 0");
  EXPECT_EQ(with("/duration_ns"_json_pointer, -1), "engine.duration_ns: must be >= 0");
  EXPECT_EQ(with("/schedule/kind"_json_pointer, "poisson"),
            "engine.schedule.kind: must be exponential|fixed|lognormal|uniform|trace, got "
            "'poisson'");
  EXPECT_EQ(with("/schedule/rate_per_s"_json_pointer, 0),
            "engine.schedule.rate_per_s: must be a number > 0");
  EXPECT_EQ(with("/schedule/rate_per_s"_json_pointer, "inf"),
            "engine.schedule.rate_per_s: must be a number > 0");
  EXPECT_EQ(with("/schedule/uniform_spread"_json_pointer, 2),
            "engine.schedule.uniform_spread: must be within 0 .. 1");
  EXPECT_EQ(with("/schedule/trace_ns/2"_json_pointer, 1),
            "engine.schedule.trace_ns[2]: must not decrease");
  EXPECT_EQ(with("/protocol/kind"_json_pointer, "ftp").rfind("engine.protocol.kind: must be ", 0),
            0u);
  EXPECT_EQ(with("/protocol/urls/1/weight"_json_pointer, -1),
            "engine.protocol.urls[1].weight: must be a number > 0");
  EXPECT_EQ(with("/protocol/urls/0/method"_json_pointer, "GET"),
            "engine.protocol.urls[0].method: unknown field");
  EXPECT_EQ(with("/protocol/grpc_calls/0/message"_json_pointer, "abc"),
            "engine.protocol.grpc_calls[0].message: must be base64 (length a multiple of 4)");
  EXPECT_EQ(with("/protocol/grpc_calls/0/message"_json_pointer, "ab!d"),
            "engine.protocol.grpc_calls[0].message: must be base64");
  EXPECT_EQ(with("/protocol/get_ratio"_json_pointer, 1.5),
            "engine.protocol.get_ratio: must be within 0 .. 1");
  EXPECT_EQ(with("/protocol/keys"_json_pointer, 0),
            "engine.protocol.keys: must be 1 .. 18446744073709551615");
  EXPECT_EQ(with("/protocol/key_distribution"_json_pointer, "pareto"),
            "engine.protocol.key_distribution: must be uniform|zipf, got 'pareto'");
  json missing = good;
  missing.erase("seed");
  EXPECT_EQ(error_of([&] { engine_config_from_json(missing); }), "engine.seed: required");
  EXPECT_EQ(error_of([&] { engine_config_from_json(json::array()); }), "engine: must be an object");
}

analysis::LatencyHistogram some_histogram(uint64_t seed) {
  analysis::LatencyHistogram h;
  std::mt19937_64 rng(seed);
  std::lognormal_distribution<double> d(12, 2);
  for (int i = 0; i < 20000; ++i) h.record(static_cast<int64_t>(d(rng)), 1 + rng() % 3);
  h.record(-1);
  return h;
}

TEST(WireHistogram, RoundTripsExactly) {
  const auto h = some_histogram(1);
  const auto b = histogram_from_json(through_text(histogram_to_json(h)));
  EXPECT_EQ(b.parts(), h.parts());
  EXPECT_EQ(b.count(), h.count());
  EXPECT_EQ(b.out_of_range(), 1u);
  EXPECT_EQ(b.mean(), h.mean());
  for (double p : {0.0, 0.25, 0.5, 0.9, 0.99, 0.9999, 1.0}) {
    EXPECT_EQ(b.percentile(p), h.percentile(p));
  }
  const analysis::LatencyHistogram other(7, 1'000'000);
  EXPECT_EQ(histogram_from_json(histogram_to_json(other)).parts(), other.parts());
}

TEST(WireHistogram, BadPartsAreNamed) {
  analysis::LatencyHistogram small(4, 1000);
  small.record(3);
  small.record(100, 2);
  const json good = histogram_to_json(small);
  auto with = [&](const json::json_pointer& ptr, const json& v) {
    json j = good;
    j[ptr] = v;
    return error_of([&] { histogram_from_json(j); });
  };
  EXPECT_EQ(with("/bins"_json_pointer, 1), "histogram.bins: unknown field");
  EXPECT_EQ(with("/buckets/0"_json_pointer, 3), "histogram.buckets[0]: must be [index, count]");
  EXPECT_EQ(with("/buckets/1/1"_json_pointer, 0),
            "histogram.buckets[1][1]: must be 1 .. 18446744073709551615");
  EXPECT_EQ(
      with("/buckets/1/0"_json_pointer, 10'000).rfind("histogram: bucket 10000 out of range", 0),
      0u);
  EXPECT_EQ(with("/min_ns"_json_pointer, 2), "histogram: min is not in the lowest bucket");
  EXPECT_EQ(with("/precision_bits"_json_pointer, 30), "histogram.precision_bits: must be 1 .. 24");
  EXPECT_EQ(with("/sum_ns"_json_pointer, "lots"), "histogram.sum_ns: must be a number");
}

EngineResult summary_round() {
  testing::SyntheticRound s;
  s.rate_per_s = 3000;
  s.types = 3;
  s.start_ns = 123'456'789;
  EngineResult r = testing::synthetic_round(s);
  r.errors.timeout = 2;
  r.errors.server = 3;
  r.errors.grpc_status = {{14, 2}, {4, 1}};
  r.by_type[1].server_errors = 3;
  r.slot_late = 4;
  r.late = 5;
  r.reconnects = 6;
  r.timestamp_fallbacks = 7;
  r.thread_cpus = {1, -1};
  r.timer.self_calibrated = false;
  r.timer.lead_ns = 40'000;
  r.timer.wakeup_p50_ns = 5'000;
  r.timer.wakeup_p99_ns = 80'000;
  r.timer.slice_ns = 100'000;
  r.timer.slice_granted = true;
  r.timer.slice_note = "granted";
  r.timer.polled_ns = 1'000;
  r.timer.thread_run_ns = 9'000;
  r.setup.tls_handshakes = 4;
  r.setup.tls_offered = 3;
  r.setup.tls_resumed = 2;
  r.setup.tls_handshake.record(1'500'000);
  r.setup.start_shift_ns = 12'000;
  r.setup.first_error = "connect: refused";
  r.setup.busy_poll_refused = 9;
  r.setup.server_closes = 4;
  r.setup.resent = 3;
  return r;
}

TEST(WireRoundSummary, RoundTripsExactlyWithoutSamples) {
  const EngineResult r = summary_round();
  EngineConfig e;
  e.schedule.rate_per_s = 3000;
  CalibrationCheck check = check_calibration(r, e, CalibrationLimits{});
  check.closed_loop.capacity_rps = std::numeric_limits<double>::infinity();
  check.reasons = {"late sends: x", "target load not reached (y)"};
  const json j = round_summary_to_json(r, check);
  EXPECT_FALSE(j.contains("samples"));
  const RoundSummary b = round_summary_from_json(through_text(j));
  EXPECT_EQ(round_summary_to_json(b.result, b.check), j);
  EXPECT_TRUE(b.result.samples.empty());
  EXPECT_EQ(b.result.scheduled, r.scheduled);
  EXPECT_EQ(b.result.sent, r.sent);
  EXPECT_EQ(b.result.completed, r.completed);
  EXPECT_EQ(b.result.late, 5u);
  EXPECT_EQ(b.result.slot_late, 4u);
  EXPECT_EQ(b.result.reconnects, 6u);
  EXPECT_EQ(b.result.timestamp_fallbacks, 7u);
  EXPECT_EQ(b.result.first_intended_ns, r.first_intended_ns);
  EXPECT_EQ(b.result.last_intended_ns, r.last_intended_ns);
  EXPECT_EQ(b.result.type_names, r.type_names);
  ASSERT_EQ(b.result.by_type.size(), 3u);
  EXPECT_EQ(b.result.by_type[1].server_errors, 3u);
  EXPECT_EQ(b.result.by_type[2].completed, r.by_type[2].completed);
  EXPECT_EQ(b.result.thread_cpus, r.thread_cpus);
  EXPECT_EQ(b.result.errors.total(), r.errors.total());
  EXPECT_EQ(b.result.errors.grpc_status, r.errors.grpc_status);
  EXPECT_EQ(b.result.latency.parts(), r.latency.parts());
  EXPECT_EQ(b.result.lateness.parts(), r.lateness.parts());
  EXPECT_EQ(b.result.timer_lateness.parts(), r.timer_lateness.parts());
  EXPECT_EQ(b.result.slot_wait.parts(), r.slot_wait.parts());
  EXPECT_FALSE(b.result.timer.self_calibrated);
  EXPECT_EQ(b.result.timer.wakeup_p99_ns, 80'000);
  EXPECT_EQ(b.result.timer.slice_note, "granted");
  EXPECT_EQ(b.result.timer.thread_run_ns, 9'000);
  EXPECT_EQ(b.result.setup.tls_resumed, 2u);
  EXPECT_EQ(b.result.setup.tls_handshake.parts(), r.setup.tls_handshake.parts());
  EXPECT_EQ(b.result.setup.start_shift_ns, 12'000);
  EXPECT_EQ(b.result.setup.first_error, "connect: refused");
  EXPECT_EQ(b.result.setup.busy_poll_refused, 9u);
  EXPECT_EQ(b.result.setup.server_closes, 4u);
  EXPECT_EQ(b.result.setup.resent, 3u);
  EXPECT_EQ(b.check.target_rps, check.target_rps);
  EXPECT_EQ(b.check.offered_rps, check.offered_rps);
  EXPECT_EQ(b.check.throughput_rps, check.throughput_rps);
  EXPECT_EQ(b.check.rate_ok, check.rate_ok);
  EXPECT_EQ(b.check.ad.applied, check.ad.applied);
  EXPECT_EQ(b.check.ad.statistic, check.ad.statistic);
  EXPECT_EQ(b.check.ad.gaps, check.ad.gaps);
  EXPECT_EQ(b.check.ad.note, check.ad.note);
  EXPECT_EQ(b.check.late_fraction, check.late_fraction);
  EXPECT_EQ(b.check.closed_loop.slots, check.closed_loop.slots);
  EXPECT_EQ(b.check.closed_loop.mean_in_flight_ns, check.closed_loop.mean_in_flight_ns);
  EXPECT_TRUE(std::isinf(b.check.closed_loop.capacity_rps));
  EXPECT_EQ(b.check.reasons, check.reasons);
}

TEST(WireRoundSummary, BadValuesAndUnknownKeysAreNamed) {
  const EngineResult r = summary_round();
  const json good = round_summary_to_json(r, CalibrationCheck{});
  auto with = [&](const json::json_pointer& ptr, const json& v) {
    json j = good;
    j[ptr] = v;
    return error_of([&] { round_summary_from_json(j); });
  };
  EXPECT_EQ(with("/samples"_json_pointer, json::array()), "samples: unknown field");
  EXPECT_EQ(with("/check/verdict"_json_pointer, "ok"), "check.verdict: unknown field");
  EXPECT_EQ(with("/check/ad/gaps"_json_pointer, -3), "check.ad.gaps: must be an integer >= 0");
  EXPECT_EQ(with("/check/reasons/0"_json_pointer, 5), "check.reasons[0]: must be a string");
  EXPECT_EQ(with("/errors/grpc_status/99"_json_pointer, 1),
            "errors.grpc_status.99: must be a gRPC status code 0 .. 16");
  EXPECT_EQ(with("/by_type/0/completed"_json_pointer, "x"),
            "by_type[0].completed: must be an integer >= 0");
  EXPECT_EQ(with("/latency/buckets/0/1"_json_pointer, 0).rfind("latency.buckets[0][1]: ", 0), 0u);
  EXPECT_EQ(with("/setup/tls_handshake/extra"_json_pointer, 1),
            "setup.tls_handshake.extra: unknown field");
  EXPECT_EQ(with("/timer/lead_ns"_json_pointer, -1), "timer.lead_ns: must be >= 0");
  EXPECT_EQ(with("/thread_cpus/1"_json_pointer, -2), "thread_cpus[1]: must be a CPU or -1");
  json missing = good;
  missing.erase("sent");
  EXPECT_EQ(error_of([&] { round_summary_from_json(missing); }), "sent: required");
}

TEST(WireSamples, ColumnsRoundTripExactly) {
  testing::SyntheticRound s;
  s.rate_per_s = 20'000;
  s.types = 4;
  s.start_ns = -50;
  s.duration_ns = 100'000'000;
  std::vector<Sample> samples = testing::synthetic_round(s).samples;
  ASSERT_GT(samples.size(), 1000u);
  for (std::size_t i = 0; i < samples.size(); ++i) {
    samples[i].lateness_ns = static_cast<int64_t>(i % 7) - 3;
    samples[i].timer_lateness_ns = static_cast<int64_t>(i % 5);
    samples[i].source = static_cast<TimestampSource>(i % 3);
    samples[i].send_source = static_cast<TimestampSource>((i + 1) % 3);
    if (i % 2) samples[i].service_time_ns = -1;
  }
  samples[0].intended_ns = std::numeric_limits<int64_t>::min();
  samples[1].latency_ns = std::numeric_limits<int64_t>::max();
  const json j = samples_to_json(samples);
  EXPECT_EQ(j.size(), 8u);
  EXPECT_EQ(j["intended_ns"].size(), samples.size());
  const auto b = samples_from_json(through_text(j));
  ASSERT_EQ(b.size(), samples.size());
  for (std::size_t i = 0; i < b.size(); ++i) {
    ASSERT_EQ(b[i].intended_ns, samples[i].intended_ns) << i;
    ASSERT_EQ(b[i].latency_ns, samples[i].latency_ns) << i;
    ASSERT_EQ(b[i].lateness_ns, samples[i].lateness_ns) << i;
    ASSERT_EQ(b[i].timer_lateness_ns, samples[i].timer_lateness_ns) << i;
    ASSERT_EQ(b[i].type, samples[i].type) << i;
    ASSERT_EQ(b[i].service_time_ns, samples[i].service_time_ns) << i;
    ASSERT_EQ(b[i].source, samples[i].source) << i;
    ASSERT_EQ(b[i].send_source, samples[i].send_source) << i;
  }
  EXPECT_TRUE(samples_from_json(samples_to_json({})).empty());
}

TEST(WireSamples, BadColumnsAreNamed) {
  std::vector<Sample> samples(3);
  const json good = samples_to_json(samples);
  auto with = [&](const json::json_pointer& ptr, const json& v) {
    json j = good;
    j[ptr] = v;
    return error_of([&] { samples_from_json(j); });
  };
  EXPECT_EQ(with("/latency_ns"_json_pointer, json::array({1, 2})),
            "latency_ns: 2 values, 3 expected (as intended_ns)");
  EXPECT_EQ(with("/type/1"_json_pointer, -1), "type[1]: must be an integer >= 0");
  EXPECT_EQ(with("/source/2"_json_pointer, 3), "source[2]: must be 0 .. 2");
  EXPECT_EQ(with("/intended_ns/0"_json_pointer, 1.5), "intended_ns[0]: must be an integer");
  EXPECT_EQ(with("/weights"_json_pointer, json::array()), "weights: unknown field");
  json missing = good;
  missing.erase("send_source");
  EXPECT_EQ(error_of([&] { samples_from_json(missing); }), "send_source: required");
}

}  // namespace
}  // namespace nabla::loadgen
