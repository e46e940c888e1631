#include "nabla/injector/flow_order.hh"

#include <gtest/gtest.h>

#include <algorithm>
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

// Flows that differ in one field only (a port, the last address byte, the
// protocol, the IP version) must spread over a hash table's buckets: the
// per-flow map is probed once per packet.
TEST(FlowKeyHash, SpreadsFlowsThatDifferInOneField) {
  std::vector<FlowKey> keys;
  for (int port = 0; port < 4096; ++port) {
    FlowKey k;
    k.ip_version = 4;
    k.protocol = 17;
    k.src = {10, 0, 0, 1};
    k.dst = {10, 0, 0, 2};
    k.src_port = static_cast<uint16_t>(30000 + port);
    k.dst_port = 9000;
    keys.push_back(k);
    k.src_port = 40000;
    k.dst_port = static_cast<uint16_t>(port);
    keys.push_back(k);
  }
  for (int last = 0; last < 256; ++last) {
    FlowKey k;
    k.ip_version = 6;
    k.protocol = 6;
    k.src[15] = static_cast<uint8_t>(last);
    k.dst[0] = 0xfd;
    keys.push_back(k);
    k.protocol = 17;  // the same pair over UDP is another flow
    keys.push_back(k);
  }
  const FlowKeyHash hash;
  std::vector<size_t> hashes;
  for (const auto& k : keys) hashes.push_back(hash(k));
  std::vector<size_t> sorted = hashes;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(std::adjacent_find(sorted.begin(), sorted.end()), sorted.end())
      << "two different flows hashed to the same 64-bit value";
  // 8704 keys in 1024 buckets (8.5 per bucket on average): a uniform hash
  // puts at most ~25 in the fullest bucket; a weak one piles them up.
  for (const size_t buckets : {size_t{1024}, size_t{1031}}) {
    std::vector<int> load(buckets, 0);
    for (const size_t h : hashes) ++load[h % buckets];
    EXPECT_LE(*std::max_element(load.begin(), load.end()), 25) << buckets << " buckets";
  }
  // Equal keys hash equally.
  EXPECT_EQ(hash(keys[0]), hash(FlowKey(keys[0])));
}

}  // namespace
}  // namespace nabla::injector
