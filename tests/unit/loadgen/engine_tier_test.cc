// The engine against the real nabla-tier binary on 127.0.0.1 (a child
// process this test starts and kills by pid). Bounds hold on any machine:
// counts exactly, latencies never below the service time. How close the
// engine's sojourn comes to queueing theory is a benchmark
// (bench/loadgen/md1_bench.cc).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "nabla/common/clock.hh"
#include "nabla/loadgen/engine.hh"
#include "tier_process.hh"

namespace nabla::loadgen {
namespace {

using nabla::testing::TierProcess;

TEST(EngineTier, HttpUrlMixAgainstNablaTier) {
  TierProcess tier(NABLA_TIER_BINARY,
                   {"--listen", "127.0.0.1:0", "--workers", "8", "--url",
                    "/a service=fixed:1ms mode=sleep", "--url", "/b service=fixed:3ms mode=sleep"});
  ASSERT_NE(tier.port(), 0) << "nabla-tier did not report its port";
  EngineConfig c;
  c.port = tier.port();
  c.protocol.kind = ProtocolSpec::Kind::kHttp;
  c.protocol.urls = {{"/a", 1.0}, {"/b", 1.0}};
  c.connections = 8;
  c.max_outstanding = 2;
  c.threads = 2;
  c.schedule.kind = ScheduleKind::kFixed;
  c.schedule.rate_per_s = 2000;
  c.duration_ns = 2'000'000'000;
  EngineResult r = run_engine(c, common::monotonic_ns() + 20'000'000);
  EXPECT_EQ(r.errors.total(), 0u);
  EXPECT_EQ(r.errors.server, 0u);
  EXPECT_EQ(r.completed, r.scheduled);
  EXPECT_NEAR(r.achieved_rate(), 2000, 20);  // within 1%
  ASSERT_EQ(r.type_names, (std::vector<std::string>{"/a", "/b"}));
  std::vector<int64_t> lat[2];
  for (const auto& s : r.samples) {
    ASSERT_LT(s.type, 2u);
    lat[s.type].push_back(s.latency_ns);
    // X-Service-Time-Ns: at least the sleep, not much more on an idle worker.
    EXPECT_GE(s.service_time_ns, s.type == 0 ? 1'000'000 : 3'000'000);
  }
  for (int t = 0; t < 2; ++t) {
    ASSERT_GT(lat[t].size(), 1000u);
    std::nth_element(lat[t].begin(), lat[t].begin() + lat[t].size() / 2, lat[t].end());
    const int64_t p50 = lat[t][lat[t].size() / 2];
    const int64_t service = t == 0 ? 1'000'000 : 3'000'000;
    EXPECT_GE(p50, service) << "type " << t;  // how far above is bench/loadgen's figure
  }
}

TEST(EngineTier, ClosedLoopAgainstNablaTierShowsSlotWaits) {
  TierProcess tier(NABLA_TIER_BINARY,
                   {"--listen", "127.0.0.1:0", "--url", "/ service=fixed:5ms mode=sleep"});
  ASSERT_NE(tier.port(), 0);
  EngineConfig c;
  c.port = tier.port();
  c.protocol.kind = ProtocolSpec::Kind::kHttp;
  c.schedule.kind = ScheduleKind::kFixed;
  c.schedule.rate_per_s = 1000;  // 5x the 200/s one connection with K = 1 can do
  c.max_requests = 100;
  c.request_timeout_ns = 3'000'000'000;
  EngineResult r = run_engine(c, common::monotonic_ns() + 20'000'000);
  EXPECT_EQ(r.completed, 100u);
  EXPECT_GE(r.slot_late, 90u);
  EXPECT_LT(r.late, r.slot_late);
  // A due send is noticed on time while earlier ones wait for the slot (the
  // timer stays armed): had the loop waited for replies (every 5 ms) to
  // notice due sends, the median timer lateness would be ~2 ms.
  EXPECT_LT(r.timer_lateness.percentile(0.5), 1'000'000);
  EXPECT_GT(r.samples.back().latency_ns, 350'000'000);
}

}  // namespace
}  // namespace nabla::loadgen
