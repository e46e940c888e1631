#include "nabla/injector/flow_order.hh"

#include <gtest/gtest.h>

#include <vector>

#include "nabla/injector/waveform.hh"

namespace nabla::injector {
namespace {

constexpr int64_t kMs = 1'000'000;

std::vector<uint8_t> ipv4_udp(uint8_t src_last, uint16_t sport, uint16_t dport) {
  return {0x45,
          0,
          0,
          28,
          0,
          1,
          0x40,
          0,
          64,
          17,
          0,
          0,
          10,
          0,
          0,
          src_last,
          10,
          0,
          0,
          2,
          static_cast<uint8_t>(sport >> 8),
          static_cast<uint8_t>(sport),
          static_cast<uint8_t>(dport >> 8),
          static_cast<uint8_t>(dport),
          0,
          8,
          0,
          0};
}

TEST(FlowKey, ReadsTheFiveTuple) {
  const auto key = flow_key_of(ipv4_udp(1, 1000, 9000));
  ASSERT_TRUE(key.has_value());
  EXPECT_EQ(key->ip_version, 4);
  EXPECT_EQ(key->protocol, 17);
  EXPECT_EQ(key->src[3], 1);
  EXPECT_EQ(key->dst[3], 2);
  EXPECT_EQ(key->src_port, 1000);
  EXPECT_EQ(key->dst_port, 9000);
  EXPECT_NE(*key, *flow_key_of(ipv4_udp(1, 1001, 9000)));
  EXPECT_EQ(*key, *flow_key_of(ipv4_udp(1, 1000, 9000)));
  EXPECT_FALSE(flow_key_of(std::vector<uint8_t>{0x45, 0}).has_value());
  EXPECT_FALSE(flow_key_of(std::vector<uint8_t>{}).has_value());
}

TEST(FlowKey, NonFirstFragmentsHaveNoPorts) {
  auto frag = ipv4_udp(1, 1000, 9000);
  frag[7] = 10;  // fragment offset 80 bytes
  const auto key = flow_key_of(frag);
  ASSERT_TRUE(key.has_value());
  EXPECT_EQ(key->src_port, 0);
  EXPECT_EQ(key->dst_port, 0);
}

TEST(FlowOrder, FallingDelayEdgeNeverReordersAFlow) {
  // Square wave 5 ms high / 0 ms low, 10 ms period; a packet every 100 µs.
  const Waveform w = Waveform::square(5.0 * kMs, 10 * kMs, 0.5);
  FlowOrder order;
  const FlowKey flow = *flow_key_of(ipv4_udp(1, 1000, 9000));
  int64_t last = 0;
  int held_back = 0;
  for (int64_t t = 0; t < 100 * kMs; t += 100'000) {
    const auto delay = static_cast<int64_t>(w.value(t));
    const int64_t release = order.release_ns(flow, t, delay);
    EXPECT_GE(release, last);
    EXPECT_GE(release, t + delay);
    if (release > t + delay) ++held_back;
    last = release;
  }
  // After each falling edge, 5 ms of low-half packets queue behind the last
  // high-half packet: 50 packets per cycle minus the one released on time.
  EXPECT_EQ(held_back, 10 * 49);
}

TEST(FlowOrder, FlowsAreIndependent) {
  FlowOrder order;
  const FlowKey a = *flow_key_of(ipv4_udp(1, 1000, 9000));
  const FlowKey b = *flow_key_of(ipv4_udp(1, 1001, 9000));
  EXPECT_EQ(order.release_ns(a, 0, 20 * kMs), 20 * kMs);
  EXPECT_EQ(order.release_ns(b, 1 * kMs, 0), 1 * kMs);          // not behind a
  EXPECT_EQ(order.release_ns(a, 1 * kMs, 0), 20 * kMs);         // behind a's first
  EXPECT_EQ(order.release_ns(a, 2 * kMs, -5 * kMs), 20 * kMs);  // negative delay = 0
  EXPECT_EQ(order.flows(), 2u);
  EXPECT_EQ(order.forget_released(1 * kMs), 1u);  // b released by then
  EXPECT_EQ(order.flows(), 1u);
  EXPECT_EQ(order.forget_released(20 * kMs), 1u);
  EXPECT_EQ(order.flows(), 0u);
}

}  // namespace
}  // namespace nabla::injector
