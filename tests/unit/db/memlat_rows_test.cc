// The memlat table: rows written through the Store come back through the
// typed read in time order, a NULL latency stays NULL, and the constraints
// refuse what cannot be a measurement.
#include <gtest/gtest.h>

#include "nabla/db/reads.hh"
#include "nabla/db/store.hh"
#include "temp_dir.hh"

namespace nabla::db {
namespace {

TEST(MemlatRows, WrittenAndReadBackInTimeOrder) {
  testing::TempDir dir;
  Store store = Store::open(dir.file("m.db"), 1'000);
  RunStart start;
  start.kind = RunKind::kLoad;
  start.tool_version = "test";
  start.started_ns = 1'000;
  const std::int64_t run = store.begin_run(start);
  MemlatSample later{run, 3'000, 1'000, 90.5, 2.1, 2.1e9, 2.1e9, 1.4e8, 1e6, "pid 42"};
  MemlatSample idle{run, 2'000, 1'000, std::nullopt, std::nullopt, 2.1e9, 2.1e9, 0, 0, "pid 42"};
  store.add_memlat_sample(later);
  store.add_memlat_sample(idle);
  const std::vector<MemlatSample> rows = run_memlat(store.database(), run);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].t_ns, 2'000);
  EXPECT_FALSE(rows[0].latency_ns.has_value());
  EXPECT_EQ(rows[1].latency_ns, 90.5);
  EXPECT_EQ(rows[1].requests, 1e6);
  EXPECT_EQ(rows[1].target, "pid 42");
  EXPECT_TRUE(run_memlat(store.database(), run + 1).empty());

  MemlatSample bad = later;
  bad.interval_ns = 0;
  EXPECT_THROW(store.add_memlat_sample(bad), Error);
  bad = later;
  bad.requests = -1;
  EXPECT_THROW(store.add_memlat_sample(bad), Error);
}

}  // namespace
}  // namespace nabla::db
