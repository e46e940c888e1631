// NFQUEUE packet ids wrap at 2^32 and are ordered as serial numbers, as the
// kernel orders them for batch verdicts (injector/nfqueue.hh).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "nabla/injector/nfqueue.hh"

namespace nabla::injector {
namespace {

constexpr uint32_t kLast = 0xffffffffu;

TEST(PacketId, OrderCarriesOnAcrossTheWrap) {
  EXPECT_TRUE(packet_id_before(1, 2));
  EXPECT_FALSE(packet_id_before(2, 1));
  EXPECT_FALSE(packet_id_before(7, 7));
  EXPECT_TRUE(packet_id_before(kLast, 0));
  EXPECT_TRUE(packet_id_before(kLast - 1, 3));
  EXPECT_FALSE(packet_id_before(0, kLast));
  std::vector<uint32_t> releasing = {1, kLast - 1, 0, kLast};
  std::sort(releasing.begin(), releasing.end(), packet_id_before);
  EXPECT_EQ(releasing, (std::vector<uint32_t>{kLast - 1, kLast, 0, 1}));
}

TEST(PacketId, GapsAcrossTheWrapAreCounted) {
  EXPECT_EQ(packet_ids_skipped(1, 2), 0u);
  EXPECT_EQ(packet_ids_skipped(1, 5), 3u);
  EXPECT_EQ(packet_ids_skipped(kLast, 0), 0u);
  EXPECT_EQ(packet_ids_skipped(kLast - 1, 1), 2u);  // kLast and 0 never arrived
  EXPECT_EQ(packet_ids_skipped(5, 3), 0u);          // not after: no gap
  EXPECT_EQ(packet_ids_skipped(2, 2), 0u);
}

}  // namespace
}  // namespace nabla::injector
