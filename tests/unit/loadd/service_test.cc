// nabla-loadd's round bookkeeping and lease policy, on a virtual clock with
// a round body that stands in for the engine; and the agent's refusal of
// root.
#include "nabla/loadd/service.hh"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "nabla/loadd/daemon.hh"

namespace nabla::loadd {
namespace {

using protocol::RoundState;
using namespace std::chrono_literals;

constexpr int64_t kSecond = 1'000'000'000;

// A body that holds the round until released or stopped, then reports
// three samples at start + 1, 2, 3 ms (absolute, as the engine does).
struct FakeEngine {
  std::atomic<bool> release{false};
  std::atomic<bool> saw_stop{false};
  std::atomic<bool> fail{false};
  std::atomic<int64_t> started_at{0};

  RoundBody body() {
    return [this](const loadgen::EngineConfig& config, int64_t start_ns) {
      started_at = start_ns;
      // Bounded: 5 s at most.
      for (int i = 0; i < 5000 && !release && !(config.stop && *config.stop); ++i) {
        std::this_thread::sleep_for(1ms);
      }
      if (config.stop && *config.stop) saw_stop = true;
      if (fail) throw std::runtime_error("connect refused");
      RoundReport r;
      for (int k = 1; k <= 3; ++k) {
        loadgen::Sample s;
        s.intended_ns = start_ns + k * 1'000'000;
        s.latency_ns = 50'000;
        r.result.samples.push_back(s);
      }
      r.result.scheduled = r.result.sent = r.result.completed = 3;
      r.result.first_intended_ns = start_ns + 1'000'000;
      r.result.last_intended_ns = start_ns + 3'000'000;
      return r;
    };
  }
};

class ServiceTest : public ::testing::Test {
 protected:
  ServiceTest() : service_(ServiceOptions{}, engine_.body(), [this] { return now_.load(); }) {}

  StartRequest request(const std::string& owner = "alice") {
    StartRequest r;
    r.owner = owner;
    r.lease_ns = 2 * kSecond;
    r.lead_ns = 100'000'000;
    r.engine.host = "127.0.0.1";
    r.engine.port = 9;
    r.engine.duration_ns = kSecond;
    return r;
  }

  // Waits (bounded, 5 s) until the round is no longer running.
  RoundStatus wait_finished(const std::string& id, const std::string& owner = "alice") {
    RoundStatus s;
    for (int i = 0; i < 500; ++i) {
      s = service_.status(id, owner);
      if (s.state != RoundState::kRunning && !service_.busy()) break;
      std::this_thread::sleep_for(10ms);
    }
    return s;
  }

  std::atomic<int64_t> now_{1000 * kSecond};
  FakeEngine engine_;
  LoadService service_;
};

TEST_F(ServiceTest, StartsAtItsOwnClockPlusTheLead) {
  const auto started = service_.start(request());
  EXPECT_FALSE(started.id.empty());
  EXPECT_EQ(started.start_ns, now_ + 100'000'000);
  EXPECT_TRUE(service_.busy());
  const auto s = service_.status(started.id, "alice");
  EXPECT_EQ(s.state, RoundState::kRunning);
  EXPECT_EQ(s.lease_remaining_ns, 2 * kSecond);
}

TEST_F(ServiceTest, OneRoundAtATime) {
  const auto started = service_.start(request());
  try {
    service_.start(request("bob"));
    FAIL() << "a second round started";
  } catch (const Refused& e) {
    EXPECT_NE(std::string(e.what()).find("busy: round " + started.id + " of owner alice"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(service_.start(request("alice")), Refused);
}

TEST_F(ServiceTest, OnlyTheOwnerSeesItsRound) {
  const auto started = service_.start(request());
  try {
    service_.status(started.id, "bob");
    FAIL();
  } catch (const Refused& e) {
    EXPECT_NE(std::string(e.what()).find("belongs to owner alice"), std::string::npos);
  }
  EXPECT_THROW(service_.stop(started.id, "bob"), Refused);
  EXPECT_THROW(service_.status("r999", "alice"), Refused);
}

TEST_F(ServiceTest, AnUnpolledRoundLapsesAndIsStoppedThenFreed) {
  const auto started = service_.start(request());
  now_ += 2 * kSecond;  // exactly the lease: still alive
  EXPECT_TRUE(service_.expire(now_).empty());
  now_ += 1;
  const auto lapsed = service_.expire(now_);
  ASSERT_EQ(lapsed.size(), 1u);
  EXPECT_EQ(lapsed[0], started.id);
  const auto s = wait_finished(started.id);
  EXPECT_EQ(s.state, RoundState::kLapsed);
  EXPECT_TRUE(engine_.saw_stop);
  // Readable for one more lease after its last poll, then freed.
  now_ += 2 * kSecond + 1;
  service_.expire(now_);
  EXPECT_THROW(service_.status(started.id, "alice"), Refused);
  EXPECT_FALSE(service_.current());
}

TEST_F(ServiceTest, PollingRenewsTheLease) {
  const auto started = service_.start(request());
  for (int i = 0; i < 5; ++i) {
    now_ += kSecond + kSecond / 2;
    service_.status(started.id, "alice");
    EXPECT_TRUE(service_.expire(now_).empty());
  }
  EXPECT_EQ(service_.status(started.id, "alice").state, RoundState::kRunning);
}

TEST_F(ServiceTest, ADoneRoundsTimesAreRelativeToItsStart) {
  const auto started = service_.start(request());
  EXPECT_THROW(service_.result(started.id, "alice"), Refused);  // still running
  engine_.release = true;
  EXPECT_EQ(wait_finished(started.id).state, RoundState::kDone);
  const RoundResult r = service_.result(started.id, "alice");
  EXPECT_EQ(r.start_ns, started.start_ns);
  ASSERT_EQ(r.report->result.samples.size(), 3u);
  EXPECT_EQ(r.report->result.samples[0].intended_ns, 1'000'000);
  EXPECT_EQ(r.report->result.samples[2].intended_ns, 3'000'000);
  EXPECT_EQ(r.report->result.first_intended_ns, 1'000'000);
  EXPECT_EQ(r.report->result.last_intended_ns, 3'000'000);
  EXPECT_FALSE(service_.busy());
}

TEST_F(ServiceTest, AFinishedRoundIsKeptForItsOwnerWithinTheLease) {
  engine_.release = true;
  const auto first = service_.start(request());
  wait_finished(first.id);
  // Another owner waits for the lease; the same owner replaces it.
  EXPECT_THROW(service_.start(request("bob")), Refused);
  const auto second = service_.start(request("alice"));
  EXPECT_NE(second.id, first.id);
  wait_finished(second.id);
  now_ += 2 * kSecond + 1;
  const auto third = service_.start(request("bob"));
  EXPECT_NE(third.id, second.id);
}

TEST_F(ServiceTest, StopStopsAndFreesTheRound) {
  const auto started = service_.start(request());
  const auto stopped = service_.stop(started.id, "alice");
  EXPECT_EQ(stopped.state, RoundState::kStopped);
  EXPECT_THROW(service_.status(started.id, "alice"), Refused);
  // The next start waits for the stopped round's thread.
  const auto next = service_.start(request("bob"));
  EXPECT_TRUE(engine_.saw_stop);
  EXPECT_NE(next.id, started.id);
}

TEST_F(ServiceTest, AFailedRoundSaysWhy) {
  engine_.fail = true;
  engine_.release = true;
  const auto started = service_.start(request());
  const auto s = wait_finished(started.id);
  EXPECT_EQ(s.state, RoundState::kFailed);
  EXPECT_EQ(s.error, "connect refused");
  EXPECT_THROW(service_.result(started.id, "alice"), Refused);
}

// The limits of the agent's flags, each naming the engine's field.
void expect_refused(LoadService& service, StartRequest request, const std::string& prefix) {
  try {
    service.start(std::move(request));
    FAIL() << "started; expected " << prefix;
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()).rfind(prefix, 0), 0u) << e.what();
  }
}

TEST(ServiceLimits, RefusesWhatTheFlagsDoNotAllow) {
  ServiceOptions o;
  o.limits.allow_target = {Cidr::parse("10.0.0.0/8"), Cidr::parse("fd00::/64")};
  o.limits.max_rate = 1000;
  o.limits.max_connections = 8;
  o.limits.max_round_ns = 10 * kSecond;
  LoadService service(
      o, [](const loadgen::EngineConfig&, int64_t) { return RoundReport(); },
      [] { return int64_t{0}; });
  StartRequest ok;
  ok.owner = "a";
  ok.engine.host = "10.1.2.3";
  ok.engine.schedule.rate_per_s = 1000;
  ok.engine.connections = 8;
  ok.engine.duration_ns = 10 * kSecond;

  auto r = ok;
  r.engine.host = "192.168.0.1";
  expect_refused(service, r, "engine.host: 192.168.0.1 is outside this agent's --allow-target");
  r = ok;
  r.engine.host = "fd00:0:0:1::1";
  expect_refused(service, r, "engine.host:");
  r = ok;
  r.engine.host = "target.example";
  expect_refused(service, r, "engine.host: 'target.example' is not an address literal");
  r = ok;
  r.engine.schedule.rate_per_s = 1001;
  expect_refused(service, r, "engine.schedule.rate_per_s: 1001 is above this agent's --max-rate");
  r = ok;
  r.engine.connections = 9;
  expect_refused(service, r, "engine.connections: 9 is above this agent's --max-connections 8");
  r = ok;
  r.engine.duration_ns = 10 * kSecond + 1;
  expect_refused(service, r, "engine.duration_ns:");
  r = ok;
  r.engine.duration_ns = 0;
  r.engine.max_requests = 100;
  expect_refused(service, r, "engine.duration_ns: required");

  r = ok;
  r.engine.host = "fd00::7";
  EXPECT_NO_THROW(service.start(r));
}

TEST(ServiceLimits, RefusesMoreThreadsThanMaxThreads) {
  ServiceOptions o;
  o.limits.max_threads = 4;
  LoadService service(
      o, [](const loadgen::EngineConfig&, int64_t) { return RoundReport(); },
      [] { return int64_t{0}; });
  StartRequest r;
  r.owner = "a";
  r.engine.host = "10.1.2.3";
  r.engine.schedule.rate_per_s = 1000;
  r.engine.threads = 5;
  r.engine.connections = 5;
  r.engine.duration_ns = kSecond;
  expect_refused(service, r, "engine.threads: 5 is above this agent's --max-threads 4");
  r.engine.threads = 4;
  EXPECT_NO_THROW(service.start(r));
}

// The samples a recording round expects (rate x duration, or max_requests
// when fewer) must fit: refused before anything is sent. A throughput round
// records none, so only its rate and duration bound it.
TEST(ServiceLimits, RefusesRoundsWhoseSamplesWouldNotFit) {
  ServiceOptions o;
  o.limits.max_samples = 10'000;
  LoadService service(
      o, [](const loadgen::EngineConfig&, int64_t) { return RoundReport(); },
      [] { return int64_t{0}; });
  StartRequest ok;
  ok.owner = "a";
  ok.engine.host = "10.1.2.3";
  ok.engine.schedule.rate_per_s = 1000;
  ok.engine.duration_ns = 10 * kSecond;  // 10000 samples: just fits

  for (const auto kind : {loadgen::AgentKind::kSymmetric, loadgen::AgentKind::kLatency}) {
    auto r = ok;
    r.kind = kind;
    r.engine.duration_ns = 10 * kSecond + 2'000'000;  // 10002
    expect_refused(service, r,
                   "engine.schedule.rate_per_s: 1000 rps for 10.002 s records about 10002 "
                   "samples, above this agent's --max-samples 10000");
  }
  auto r = ok;
  r.engine.duration_ns = 20 * kSecond;
  r.engine.max_requests = 10'000;  // the count bound ends it first
  EXPECT_NO_THROW(service.start(r));
  service.stop_all();
  r = ok;
  r.engine.duration_ns = 20 * kSecond;
  r.kind = loadgen::AgentKind::kThroughput;
  r.engine.record_samples = false;
  EXPECT_NO_THROW(service.start(r));
  service.stop_all();
  r = ok;
  r.kind = loadgen::AgentKind::kLatency;
  EXPECT_NO_THROW(service.start(r));
}

// Lancet's agents: latency and symmetric ones stamp in the kernel, only a
// latency agent busy-polls; a throughput agent does neither. The host's
// CPUs apply to every kind.
TEST(LocalEngine, TimestampsAndBusyPollingByKind) {
  ServiceOptions o;
  o.cpus = {0};
  o.busy_poll_us = 30;
  loadgen::EngineConfig e;
  e.busy_poll_us = 99;  // never the request's own
  const auto latency = local_engine(e, loadgen::AgentKind::kLatency, o);
  EXPECT_TRUE(latency.software_rx_timestamps);
  EXPECT_EQ(latency.busy_poll_us, 30);
  EXPECT_EQ(latency.cpus, std::vector<int>{0});
  const auto symmetric = local_engine(e, loadgen::AgentKind::kSymmetric, o);
  EXPECT_TRUE(symmetric.software_rx_timestamps);
  EXPECT_EQ(symmetric.busy_poll_us, 0);
  const auto throughput = local_engine(e, loadgen::AgentKind::kThroughput, o);
  EXPECT_FALSE(throughput.software_rx_timestamps);
  EXPECT_EQ(throughput.busy_poll_us, 0);
  EXPECT_EQ(throughput.cpus, std::vector<int>{0});
  o.busy_poll_us = 0;
  EXPECT_EQ(local_engine(e, loadgen::AgentKind::kLatency, o).busy_poll_us, 0);
}

// The body gets the local engine: what the agent really runs.
TEST(LocalEngine, TheRoundRunsIt) {
  ServiceOptions o;
  o.busy_poll_us = 25;
  std::atomic<int> busy_poll{-1};
  std::atomic<bool> stamps{false};
  LoadService service(
      o,
      [&](const loadgen::EngineConfig& c, int64_t) {
        busy_poll = c.busy_poll_us;
        stamps = c.software_rx_timestamps;
        return RoundReport();
      },
      [] { return int64_t{0}; });
  StartRequest r;
  r.owner = "a";
  r.kind = loadgen::AgentKind::kLatency;
  r.engine.host = "127.0.0.1";
  r.engine.schedule.rate_per_s = 100;
  r.engine.duration_ns = kSecond;
  service.start(r);
  for (int i = 0; i < 500 && service.busy(); ++i) std::this_thread::sleep_for(10ms);
  EXPECT_EQ(busy_poll.load(), 25);
  EXPECT_TRUE(stamps.load());
}

// An agent needs no privilege: root is refused unless --allow-root says so,
// with one line saying how to run it instead.
TEST(RootPolicy, RootIsRefusedWithoutAllowRoot) {
  const auto refusal = root_refusal(0, false);
  ASSERT_TRUE(refusal);
  EXPECT_EQ(*refusal,
            "nabla-loadd needs no privilege: run it as an unprivileged user (the package's unit "
            "runs it as nabla-load), or pass --allow-root");
  EXPECT_FALSE(root_refusal(0, true));
  EXPECT_FALSE(root_refusal(65534, false));
  EXPECT_FALSE(root_refusal(1000, true));
}

TEST(Cidr, ParsesAndMatches) {
  const Cidr c = Cidr::parse("10.1.0.0/16");
  EXPECT_TRUE(c.contains(*common::IpAddress::parse("10.1.200.3")));
  EXPECT_FALSE(c.contains(*common::IpAddress::parse("10.2.0.1")));
  EXPECT_FALSE(c.contains(*common::IpAddress::parse("::1")));
  EXPECT_EQ(Cidr::parse("127.0.0.1").to_string(), "127.0.0.1/32");
  EXPECT_TRUE(Cidr::parse("0.0.0.0/0").contains(*common::IpAddress::parse("8.8.8.8")));
  EXPECT_TRUE(Cidr::parse("fd00::/60").contains(*common::IpAddress::parse("fd00:0:0:f::1")));
  EXPECT_FALSE(Cidr::parse("fd00::/61").contains(*common::IpAddress::parse("fd00:0:0:f::1")));
  EXPECT_THROW(Cidr::parse("10.0.0.0/33"), std::invalid_argument);
  EXPECT_THROW(Cidr::parse("10.0.0.0/"), std::invalid_argument);
  EXPECT_THROW(Cidr::parse("host/8"), std::invalid_argument);
}

}  // namespace
}  // namespace nabla::loadd
