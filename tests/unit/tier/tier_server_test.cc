// nabla-tier on loopback: call patterns, service time, framing errors,
// keep-alive. Each test runs real servers on 127.0.0.1 with ephemeral ports.
#include "nabla/tier/tier_server.hh"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <thread>

#include "nabla/common/clock.hh"
#include "tier_client.hh"

namespace nabla::tier {
namespace {

using common::monotonic_ns;
using testing::Reply;
using testing::TestClient;

constexpr int64_t kMs = 1'000'000;

TierConfig leaf_config(const std::string& spec, int workers) {
  TierConfig cfg;
  cfg.listen = TierAddress{"127.0.0.1", 0};
  cfg.workers = workers;
  cfg.urls.push_back(UrlSpec::parse(spec));
  return cfg;
}

TierConfig front_config(uint16_t db_port, const std::vector<std::string>& specs) {
  TierConfig cfg;
  cfg.listen = TierAddress{"127.0.0.1", 0};
  cfg.workers = 2;
  cfg.tiers["db"] = TierAddress{"127.0.0.1", db_port};
  for (const auto& s : specs) cfg.urls.push_back(UrlSpec::parse(s));
  return cfg;
}

// Waits (bounded) until `pred` holds.
template <typename Pred>
bool eventually(Pred pred, int64_t timeout_ns = 3000 * kMs) {
  const int64_t end = monotonic_ns() + timeout_ns;
  while (monotonic_ns() < end) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return pred();
}

TEST(TierServer, SerialThreeMakesThreeSequentialCalls) {
  TierServer db(leaf_config("* service=fixed:5ms mode=sleep", 4));
  db.start();
  TierServer app(front_config(db.port(), {"/view call=db:serial:3"}));
  app.start();
  TestClient client(app.port());
  ASSERT_TRUE(client.connected());
  const Reply r = client.get("/view");
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(db.counters().requests, 3u);
  // Sequential: three 5 ms sleeps back to back (parallel would be ~5 ms).
  const int64_t downstream = r.header_int("X-Downstream-Ns");
  EXPECT_GE(downstream, 15 * kMs);
  EXPECT_LT(downstream, 15 * kMs + 100 * kMs);
  // The pool reuses one keep-alive connection for the three calls.
  EXPECT_EQ(app.downstream_counters("db").connects, 1u);
  EXPECT_EQ(app.downstream_counters("db").requests_ok, 3u);
}

// Sliced waits: the same three calls, each reply waited for in blocks of
// 200 us, so a 20 ms reply is waited for in many slices; a plain wait has
// none.
TEST(TierServer, SlicedWaitsGiveTheSameCallsAndCountTheirSlices) {
  TierServer db(leaf_config("* service=fixed:20ms mode=sleep", 4));
  db.start();
  TierConfig cfg = front_config(db.port(), {"/view call=db:serial:3"});
  cfg.wait_slice_ns = 200'000;
  TierServer app(cfg);
  app.start();
  TierServer plain(front_config(db.port(), {"/view call=db:serial:3"}));
  plain.start();
  for (TierServer* front : {&app, &plain}) {
    TestClient client(front->port());
    ASSERT_TRUE(client.connected());
    const Reply r = client.get("/view");
    ASSERT_EQ(r.status, 200);
    EXPECT_GE(r.header_int("X-Downstream-Ns"), 60 * kMs);  // nothing early
    EXPECT_EQ(front->downstream_counters("db").requests_ok, 3u);
    EXPECT_EQ(front->downstream_counters("db").requests_failed, 0u);
  }
  EXPECT_EQ(db.counters().requests, 6u);
  // 60 ms of waiting in 200 us slices: at least one slice ends empty unless
  // the worker was stalled for whole 20 ms replies at a time.
  EXPECT_GE(app.downstream_counters("db").wait_slices, 1u);
  EXPECT_EQ(plain.downstream_counters("db").wait_slices, 0u);
}

TEST(TierServer, ParallelFourOverlaps) {
  TierServer db(leaf_config("* service=fixed:50ms mode=sleep", 4));
  db.start();
  TierServer app(front_config(db.port(), {"/browse call=db:parallel:4"}));
  app.start();
  TestClient client(app.port());
  const Reply r = client.get("/browse");
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(db.counters().requests, 4u);
  const int64_t downstream = r.header_int("X-Downstream-Ns");
  EXPECT_GE(downstream, 50 * kMs);
  EXPECT_LT(downstream, 190 * kMs);  // serial would take >= 200 ms
  EXPECT_EQ(app.downstream_counters("db").connects, 4u);
}

TEST(TierServer, AsyncDoesNotWait) {
  TierServer db(leaf_config("* service=fixed:300ms mode=sleep", 2));
  db.start();
  TierServer app(front_config(db.port(), {"/bid call=db:async:/audit"}));
  app.start();
  TestClient client(app.port());
  const int64_t t0 = monotonic_ns();
  const Reply r = client.get("/bid");
  const int64_t elapsed = monotonic_ns() - t0;
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(r.header_int("X-Downstream-Ns"), 0);
  EXPECT_LT(elapsed, 250 * kMs);  // waiting would take >= 300 ms
  EXPECT_TRUE(eventually([&] { return db.counters().requests == 1; }));
}

TEST(TierServer, SerialThenAsyncInOrder) {
  TierServer db(leaf_config("* service=fixed:1ms", 2));
  db.start();
  TierServer app(front_config(db.port(), {"/bid call=db:serial:1 call=db:async:/audit"}));
  app.start();
  TestClient client(app.port());
  const Reply r = client.get("/bid");
  ASSERT_EQ(r.status, 200);
  EXPECT_GE(r.header_int("X-Downstream-Ns"), 1 * kMs);
  EXPECT_TRUE(eventually([&] { return db.counters().requests == 2; }));
}

TEST(TierServer, FixedServiceTimeHonoured) {
  // Every reply is at least the service time; the fastest of five is close to
  // it (a loaded 2-core CI box can preempt a spinning worker for tens of ms).
  for (const char* mode : {"spin", "sleep"}) {
    TierServer tier(leaf_config(std::string("/auth service=fixed:5ms mode=") + mode, 1));
    tier.start();
    TestClient client(tier.port());
    int64_t fastest = INT64_MAX;
    for (int i = 0; i < 5; ++i) {
      const Reply r = client.get("/auth");
      ASSERT_EQ(r.status, 200) << mode;
      const int64_t service = r.header_int("X-Service-Time-Ns");
      EXPECT_GE(service, 5 * kMs) << mode;
      EXPECT_GE(r.header_int("X-Queue-Ns"), 0) << mode;
      EXPECT_EQ(r.header_int("X-Downstream-Ns"), 0);
      fastest = std::min(fastest, service);
    }
    EXPECT_LT(fastest, 5 * kMs + 50 * kMs) << mode;
  }
}

// With one worker, a request that arrives while another is being served waits
// in the queue: that wait is reported as X-Queue-Ns and is NOT part of
// X-Service-Time-Ns (tailbench's service time excludes queueing).
TEST(TierServer, QueueWaitIsSeparateFromServiceTime) {
  TierServer tier(leaf_config("/auth service=fixed:100ms mode=sleep", 1));
  tier.start();
  TestClient a(tier.port());
  TestClient b(tier.port());
  const std::string req = "GET /auth HTTP/1.1\r\nHost: t\r\n\r\n";
  ASSERT_TRUE(a.send_raw(req));
  ASSERT_TRUE(b.send_raw(req));
  const Reply ra = a.read_reply();
  const Reply rb = b.read_reply();
  ASSERT_EQ(ra.status, 200);
  ASSERT_EQ(rb.status, 200);
  const Reply& waited = ra.header_int("X-Queue-Ns") > rb.header_int("X-Queue-Ns") ? ra : rb;
  // The second request waited for most of the first one's 100 ms of
  // service: all of it when both arrive together, less by however late the
  // second send or the server's read of it came (up to 50 ms on a loaded
  // machine). One worker sleeping, so the wait is the worker's, not the CPU's.
  EXPECT_GE(waited.header_int("X-Queue-Ns"), 50 * kMs);
  EXPECT_GE(waited.header_int("X-Service-Time-Ns"), 100 * kMs);
  // Its service time is its own 100 ms, not queue + 100 ms.
  EXPECT_LT(waited.header_int("X-Service-Time-Ns"), waited.header_int("X-Queue-Ns") + 100 * kMs);
}

TEST(TierServer, ResponseSizeAndNotFound) {
  TierServer tier(leaf_config("/big bytes=100000", 1));
  tier.start();
  TestClient client(tier.port());
  EXPECT_EQ(client.get("/big").body_bytes, 100000u);
  EXPECT_EQ(client.get("/other").status, 404);
  EXPECT_EQ(tier.counters().not_found, 1u);
}

// A split response arrives whole, its second part no sooner than the pause
// after the first, and the keep-alive connection serves the next request.
TEST(TierServer, SplitResponseArrivesWholeAfterThePause) {
  TierConfig cfg = leaf_config("/big bytes=5000", 1);
  cfg.split_response_bytes = 64;
  cfg.split_pause_ns = 20 * kMs;
  TierServer tier(cfg);
  tier.start();
  TestClient client(tier.port());
  for (int i = 0; i < 3; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    const Reply r = client.get("/big");
    const auto elapsed = std::chrono::steady_clock::now() - t0;
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(r.body_bytes, 5000u);
    EXPECT_GE(elapsed, std::chrono::milliseconds(20));
  }
  EXPECT_EQ(client.get("/other").status, 404);  // its 100-odd bytes are split too
  EXPECT_EQ(tier.counters().requests, 4u);
}

TEST(TierServer, MalformedRequestsGet400WhileOthersAreServed) {
  TierServer tier(leaf_config("* service=fixed:100us", 2));
  tier.start();
  TestClient good(tier.port());
  ASSERT_EQ(good.get("/a").status, 200);
  const char* bad_inputs[] = {
      "GARBAGE\r\n\r\n",
      "GET /x HTTP/1.1\r\nNoColonHere\r\n\r\n",
      "GET /x HTTP/1.1\r\nContent-Length: abc\r\n\r\n",
      "GET /x HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
      "GET x HTTP/1.1\r\n\r\n",
  };
  for (const char* input : bad_inputs) {
    TestClient bad(tier.port());
    ASSERT_TRUE(bad.send_raw(input));
    const Reply r = bad.read_reply();
    EXPECT_EQ(r.status, 400) << input;
    EXPECT_TRUE(bad.closed_by_peer()) << input;
    EXPECT_EQ(good.get("/a").status, 200);  // the server keeps serving
  }
  {
    TestClient huge(tier.port());
    ASSERT_TRUE(huge.send_raw("GET /x HTTP/1.1\r\nX-Pad: " + std::string(20000, 'p')));
    EXPECT_EQ(huge.read_reply().status, 431);
  }
  {
    TestClient chunked(tier.port());
    ASSERT_TRUE(chunked.send_raw("POST /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"));
    EXPECT_EQ(chunked.read_reply().status, 501);
  }
  EXPECT_EQ(tier.counters().bad_requests, 7u);
  EXPECT_EQ(good.get("/a").status, 200);
}

TEST(TierServer, KeepAlivePipeliningAndBodies) {
  TierServer tier(leaf_config("* bytes=10", 2));
  tier.start();
  TestClient client(tier.port());
  for (int i = 0; i < 20; ++i) {
    const Reply r = client.get("/k");
    ASSERT_EQ(r.status, 200);
    EXPECT_TRUE(r.keep_alive);
  }
  // Two pipelined requests, the first with a body, sent in one write.
  ASSERT_TRUE(
      client.send_raw("POST /p HTTP/1.1\r\nContent-Length: 5\r\n\r\nhelloGET /q HTTP/1.1\r\n\r\n"));
  EXPECT_EQ(client.read_reply().status, 200);
  EXPECT_EQ(client.read_reply().status, 200);
  EXPECT_EQ(tier.counters().connections, 1u);
  EXPECT_EQ(tier.counters().requests, 22u);
  // Connection: close is honoured.
  ASSERT_TRUE(client.send_raw("GET /c HTTP/1.1\r\nConnection: close\r\n\r\n"));
  const Reply last = client.read_reply();
  EXPECT_EQ(last.status, 200);
  EXPECT_FALSE(last.keep_alive);
  EXPECT_TRUE(client.closed_by_peer());
}

TEST(TierServer, DownstreamDownGives502) {
  // A port nobody listens on: bind, learn the port, close.
  uint16_t dead_port = 0;
  {
    TierServer probe(leaf_config("* ", 1));
    dead_port = probe.port();
  }
  TierServer app(front_config(dead_port, {"/v call=db:serial:1"}));
  app.start();
  TestClient client(app.port());
  EXPECT_EQ(client.get("/v").status, 502);
  EXPECT_EQ(app.counters().downstream_failures, 1u);
}

}  // namespace
}  // namespace nabla::tier
