// nabla-loadd's messages: round trips, and bad input refused naming the field.
#include "nabla/loadd/protocol.hh"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

namespace nabla::loadd::protocol {
namespace {

using nlohmann::json;

// Expects from_json to throw invalid_argument whose message starts with `prefix`.
template <class Message>
void expect_bad(const json& j, const std::string& prefix) {
  try {
    Message::from_json(j);
    FAIL() << "accepted " << j.dump() << "; expected " << prefix;
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()).rfind(prefix, 0), 0u) << j.dump() << " -> " << e.what();
  }
}

TEST(LoadStart, RoundTrips) {
  LoadStartParams p;
  p.owner = "run-42";
  p.lease_s = 2.5;
  p.lead_ns = 200'000'000;
  p.kind = loadgen::AgentKind::kLatency;
  p.engine = {{"host", "10.0.0.2"}};
  const auto back = LoadStartParams::from_json(p.to_json());
  EXPECT_EQ(back.owner, "run-42");
  EXPECT_EQ(back.lease_s, 2.5);
  EXPECT_EQ(back.lead_ns, 200'000'000);
  EXPECT_EQ(back.kind, loadgen::AgentKind::kLatency);
  EXPECT_EQ(back.engine, p.engine);
  EXPECT_EQ(p.to_json()["kind"], "latency");
}

TEST(LoadStart, Defaults) {
  const auto p = LoadStartParams::from_json({{"owner", "o"}, {"engine", json::object()}});
  EXPECT_EQ(p.lease_s, kDefaultLeaseS);
  EXPECT_EQ(p.lead_ns, 0);
  EXPECT_EQ(p.kind, loadgen::AgentKind::kSymmetric);
}

TEST(LoadStart, RefusesBadInputNamingTheField) {
  const json ok = {{"owner", "o"}, {"engine", json::object()}};
  expect_bad<LoadStartParams>(json::array(), "params: must be an object");
  expect_bad<LoadStartParams>({{"engine", json::object()}}, "owner: required");
  auto j = ok;
  j["owner"] = "";
  expect_bad<LoadStartParams>(j, "owner:");
  j["owner"] = "has space";
  expect_bad<LoadStartParams>(j, "owner: must be printable");
  j["owner"] = std::string(65, 'x');
  expect_bad<LoadStartParams>(j, "owner:");
  j = ok;
  j["lease_s"] = 0;
  expect_bad<LoadStartParams>(j, "lease_s: must be within (0, 3600]");
  j["lease_s"] = "5";
  expect_bad<LoadStartParams>(j, "lease_s: must be a number");
  j = ok;
  j["lead_ns"] = -1;
  expect_bad<LoadStartParams>(j, "lead_ns:");
  j["lead_ns"] = 1.5;
  expect_bad<LoadStartParams>(j, "lead_ns: must be an integer");
  j = ok;
  j["kind"] = "fast";
  expect_bad<LoadStartParams>(j, "kind: must be symmetric, throughput or latency, not 'fast'");
  j = ok;
  j["engine"] = "x";
  expect_bad<LoadStartParams>(j, "engine: must be an object");
  j = ok;
  j.erase("engine");
  expect_bad<LoadStartParams>(j, "engine: required");
  j = ok;
  j["rate"] = 5;
  expect_bad<LoadStartParams>(j, "rate: unknown field");
}

TEST(RoundRefs, RefuseBadInput) {
  EXPECT_EQ(LoadStatusParams::from_json({{"id", "r1"}, {"owner", "o"}}).id, "r1");
  expect_bad<LoadStatusParams>({{"owner", "o"}}, "id: required");
  expect_bad<LoadStopParams>({{"id", 7}, {"owner", "o"}}, "id: must be a string");
  expect_bad<LoadResultParams>({{"id", "r1"}}, "owner: required");
  expect_bad<LoadStatusParams>({{"id", "r1"}, {"owner", "o"}, {"x", 1}}, "x: unknown field");
}

TEST(LoadSamples, LimitsThePage) {
  const auto p = LoadSamplesParams::from_json({{"id", "r1"}, {"owner", "o"}, {"offset", 10}});
  EXPECT_EQ(p.offset, 10u);
  EXPECT_EQ(p.limit, kMaxSamplesPage);
  EXPECT_EQ(LoadSamplesParams::from_json(p.to_json()), p);
  expect_bad<LoadSamplesParams>({{"id", "r1"}, {"owner", "o"}, {"limit", 8193}},
                                "limit: must be within 1 .. 8192");
  expect_bad<LoadSamplesParams>({{"id", "r1"}, {"owner", "o"}, {"limit", 0}}, "limit:");
  expect_bad<LoadSamplesParams>({{"id", "r1"}, {"owner", "o"}, {"offset", -1}},
                                "offset: must not be negative");
}

TEST(Results, RoundTrip) {
  const LoadStatusResult s{"r3", RoundState::kFailed, "connect refused", 1.5};
  EXPECT_EQ(LoadStatusResult::from_json(s.to_json()), s);
  const LoadStatusResult running{"r3", RoundState::kRunning, "", 5};
  EXPECT_FALSE(running.to_json().contains("error"));
  EXPECT_EQ(LoadStatusResult::from_json(running.to_json()), running);
  expect_bad<LoadStatusResult>({{"id", "r3"}, {"state", "gone"}, {"lease_remaining_s", 1}},
                               "state: must be running, done");
  const LoadStartResult start{"r3", 123456789};
  EXPECT_EQ(LoadStartResult::from_json(start.to_json()), start);
  const LoadStopResult stop{"r3", RoundState::kDone};
  EXPECT_EQ(LoadStopResult::from_json(stop.to_json()), stop);

  LoadResultResult r;
  r.id = "r3";
  r.start_ns = 42;
  r.samples = 9;
  r.summary = {{"sent", 9}};
  const auto back = LoadResultResult::from_json(r.to_json());
  EXPECT_EQ(back.start_ns, 42);
  EXPECT_EQ(back.samples, 9u);
  EXPECT_EQ(back.summary, r.summary);
  expect_bad<LoadResultResult>({{"id", "r3"}, {"state", "done"}, {"start_ns", 1}, {"samples", 1}},
                               "summary: required");
}

TEST(Info, RoundTrips) {
  LoaddInfo i;
  i.version = "0.1.0";
  i.protocol_version = 3;
  i.pid = 7;
  i.busy = true;
  i.round = "r1";
  i.owner = "o";
  i.max_rate = 1000;
  i.max_connections = 10;
  i.max_threads = 4;
  i.max_round_s = 60;
  i.max_samples = 20'000'000;
  i.allow_target = {"10.0.0.0/8"};
  i.uptime_s = 3;
  const auto back = LoaddInfo::from_json(i.to_json());
  EXPECT_EQ(back.kind, "loadd");
  EXPECT_EQ(back.allow_target, i.allow_target);
  EXPECT_TRUE(back.busy);
  EXPECT_EQ(back.round, "r1");
  EXPECT_EQ(back.protocol_version, 3);
  EXPECT_EQ(back.max_threads, 4);
  EXPECT_EQ(back.max_samples, 20'000'000);
}

}  // namespace
}  // namespace nabla::loadd::protocol
