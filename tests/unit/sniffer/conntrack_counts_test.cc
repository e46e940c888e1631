// ConntrackCounts: live entries counted while they live and once more when
// they end, each packet once; ConntrackLive: a scan dumps the table only
// while an entry of the counted kind lives or the events cannot be trusted;
// cgroup2_mount finds the unified hierarchy in both layouts.
#include "nabla/sniffer/conntrack_counts.hh"

#include <gtest/gtest.h>

#include "nabla/sniffer/cgroups.hh"

namespace nabla::sniffer {
namespace {

ConntrackEvent entry(uint32_t id, uint64_t orig_packets, uint64_t reply_packets) {
  ConntrackEvent e;
  e.proto = Proto::kUdp;
  e.id = id;
  e.has_counters = true;
  e.orig_packets = orig_packets;
  e.orig_bytes = orig_packets * 100;
  e.reply_packets = reply_packets;
  e.reply_bytes = reply_packets * 300;
  return e;
}

TEST(ConntrackCounts, DumpsAddWhatEachEntryCountedSinceTheLast) {
  ConntrackCounts counts;
  ConntrackEvent d = counts.live(entry(7, 3, 2));  // new: everything so far
  EXPECT_EQ(d.orig_packets, 3u);
  EXPECT_EQ(d.reply_bytes, 600u);
  counts.end_dump();
  d = counts.live(entry(7, 5, 4));
  EXPECT_EQ(d.orig_packets, 2u);
  EXPECT_EQ(d.orig_bytes, 200u);
  EXPECT_EQ(d.reply_packets, 2u);
  counts.end_dump();
  d = counts.live(entry(7, 5, 4));  // idle
  EXPECT_EQ(d.orig_packets + d.reply_packets, 0u);
}

ConntrackEvent event(ConntrackEventType type, Proto proto, uint32_t id) {
  ConntrackEvent e;
  e.type = type;
  e.proto = proto;
  e.id = id;
  return e;
}

TEST(ConntrackLive, DumpsUntilTheFirstDumpThenOnlyWhileAnEntryOfTheCountedKindLives) {
  ConntrackLive live;
  EXPECT_TRUE(live.dump_needed(true));  // entries older than the subscription
  live.dumped({}, true);
  EXPECT_FALSE(live.dump_needed(true));
  live.seen(event(ConntrackEventType::kNew, Proto::kTcp, 4));
  EXPECT_FALSE(live.dump_needed(true));  // TCP is counted by the scans
  EXPECT_TRUE(live.dump_needed(false));  // unless conntrack counts TCP too
  live.seen(event(ConntrackEventType::kNew, Proto::kUdp, 9));
  EXPECT_TRUE(live.dump_needed(true));
  live.seen(event(ConntrackEventType::kDestroy, Proto::kUdp, 9));
  EXPECT_FALSE(live.dump_needed(true));
  live.seen(event(ConntrackEventType::kDestroy, Proto::kTcp, 4));
  EXPECT_FALSE(live.dump_needed(false));
}

TEST(ConntrackLive, ADumpIsTheTruthForWhatItListed) {
  ConntrackLive live;
  live.dumped({entry(7, 1, 1)}, true);  // a UDP entry lives
  EXPECT_TRUE(live.dump_needed(true));
  live.seen(event(ConntrackEventType::kNew, Proto::kTcp, 3));
  live.dumped({}, true);  // it timed out; its DESTROY may come later or never
  EXPECT_FALSE(live.dump_needed(true));
  EXPECT_TRUE(live.dump_needed(false));  // the TCP entry the dump did not list is kept
  live.dumped({}, false);
  EXPECT_FALSE(live.dump_needed(false));
}

TEST(ConntrackLive, LostEventsOrAnEntryWithoutIdMakeTheNextScanDump) {
  ConntrackLive live;
  live.dumped({}, true);
  live.lost();
  EXPECT_TRUE(live.dump_needed(true));
  live.dumped({}, true);
  EXPECT_FALSE(live.dump_needed(true));
  live.seen(event(ConntrackEventType::kNew, Proto::kTcp, 0));  // an old kernel: no CTA_ID
  EXPECT_TRUE(live.dump_needed(true));
  ConntrackEvent no_id = entry(0, 1, 1);
  live.dumped({no_id}, true);
  EXPECT_TRUE(live.dump_needed(true));  // cannot be matched with its DESTROY: keep dumping
}

TEST(ConntrackCounts, DestroyAddsOnlyTheTailAndADyingEntryNothingMore) {
  ConntrackCounts counts;
  counts.live(entry(9, 10, 10));
  counts.end_dump();
  ConntrackEvent d = counts.destroyed(entry(9, 12, 11));
  EXPECT_EQ(d.orig_packets, 2u);
  EXPECT_EQ(d.reply_packets, 1u);
  // A dump that still lists the dying entry adds nothing.
  d = counts.live(entry(9, 12, 11));
  EXPECT_EQ(d.orig_packets + d.reply_packets, 0u);
  // An entry no dump saw counts whole at DESTROY.
  d = counts.destroyed(entry(10, 4, 4));
  EXPECT_EQ(d.orig_packets, 4u);
}

TEST(ConntrackCounts, MissingEntriesAreForgottenAfterOneGraceDump) {
  ConntrackCounts counts;
  counts.live(entry(1, 1, 1));
  counts.end_dump();
  counts.end_dump();  // missing once: kept
  EXPECT_EQ(counts.size(), 1u);
  EXPECT_EQ(counts.destroyed(entry(1, 3, 1)).orig_packets, 2u);
  counts.end_dump();
  counts.end_dump();
  counts.end_dump();
  EXPECT_EQ(counts.size(), 0u);
}

TEST(ConntrackCounts, EntriesWithoutIdOrCountersCountOnlyAtDestroy) {
  ConntrackCounts counts;
  EXPECT_FALSE(counts.live(entry(0, 5, 5)).has_counters);
  EXPECT_EQ(counts.destroyed(entry(0, 5, 5)).orig_packets, 5u);
  ConntrackEvent no_acct = entry(3, 0, 0);
  no_acct.has_counters = false;
  EXPECT_FALSE(counts.live(no_acct).has_counters);
  EXPECT_EQ(counts.size(), 0u);
}

TEST(Cgroup2Mount, FindsTheUnifiedHierarchyInEitherLayout) {
  EXPECT_EQ(cgroup2_mount("30 23 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw\n"),
            "/sys/fs/cgroup");
  EXPECT_EQ(
      cgroup2_mount("31 23 0:27 / /sys/fs/cgroup/memory rw shared:9 - cgroup cgroup rw,memory\n"
                    "40 23 0:33 / /sys/fs/cgroup/unified rw shared:5 - cgroup2 cgroup2 rw\n"),
      "/sys/fs/cgroup/unified");
  EXPECT_EQ(cgroup2_mount("31 23 0:27 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu\n"), "");
}

}  // namespace
}  // namespace nabla::sniffer
