#include "nabla/db/sample_writer.hh"

#include <gtest/gtest.h>

#include "nabla/db/store.hh"
#include "temp_dir.hh"

namespace nabla::db {
namespace {

class SampleWriterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store_.emplace(Store::open(dir_.file("w.db"), 0));
    RunStart run;
    run.tool_version = "t";
    run_ = store_->begin_run(run);
    type_ = store_->transaction_type_id("get");
  }
  std::int64_t count(const std::string& where = "") {
    return std::get<std::int64_t>(
        query(store_->database(), "SELECT count(*) FROM samples " + where).rows[0][0]);
  }
  Sample sample(std::int64_t i) {
    Sample s;
    s.send_ns = 1000 * i;
    s.latency_ns = 50'000 + i;
    s.service_ns = i % 3 == 0 ? std::optional<std::int64_t>(i) : std::nullopt;
    s.type_id = type_;
    s.source = TimestampSource::kSoftware;
    return s;
  }

  testing::TempDir dir_;
  std::optional<Store> store_;
  std::int64_t run_ = 0;
  std::int64_t type_ = 0;
};

TEST_F(SampleWriterTest, WritesInBatchesAndFlushesTheRestOnDestruction) {
  {
    SampleWriter w = store_->sample_writer(run_, 1000);
    for (int i = 0; i < 2500; ++i) w.add(sample(i));
    EXPECT_EQ(w.rows_written(), 2000);  // two full batches committed
    EXPECT_EQ(w.buffered(), 500u);
    EXPECT_EQ(count(), 2000);
  }
  EXPECT_EQ(count(), 2500);
  // Every value arrives intact, including the partial multi-row tail.
  auto r = query(store_->database(),
                 "SELECT sum(send_ns), sum(latency_ns), count(service_ns), sum(service_ns), "
                 "min(ts_source), max(ts_source), count(DISTINCT run_id) FROM samples");
  EXPECT_EQ(r.rows[0], (std::vector<Value>{std::int64_t{1000} * 2499 * 2500 / 2,
                                           std::int64_t{50'000} * 2500 + 2499 * 2500 / 2,
                                           std::int64_t{834}, std::int64_t{3 * 833 * 834 / 2},
                                           std::int64_t{1}, std::int64_t{1}, std::int64_t{1}}));
}

TEST_F(SampleWriterTest, ExplicitFlushAndPhases) {
  Phase phase;
  phase.run_id = run_;
  phase.kind = PhaseKind::kBaseline;
  const auto phase_id = store_->add_phase(phase);
  SampleWriter w = store_->sample_writer(run_);
  for (int i = 0; i < 70; ++i) {
    Sample s = sample(i);
    if (i >= 10) s.phase_id = phase_id;
    w.add(s);
  }
  EXPECT_EQ(count(), 0);
  w.flush();
  EXPECT_EQ(w.rows_written(), 70);
  EXPECT_EQ(count("WHERE phase_id = " + std::to_string(phase_id)), 60);
  w.flush();  // nothing buffered: no-op
  EXPECT_EQ(count(), 70);
}

TEST_F(SampleWriterTest, AFailedBatchIsRolledBackAndCounted) {
  SampleWriter w = store_->sample_writer(run_, 100);
  for (int i = 0; i < 99; ++i) w.add(sample(i));
  Sample bad = sample(99);
  bad.type_id = type_ + 1000;  // no such transaction type
  try {
    w.add(bad);
    FAIL() << "foreign key not enforced";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), 787);  // SQLITE_CONSTRAINT_FOREIGNKEY
  }
  EXPECT_EQ(w.failed_rows(), 100);
  EXPECT_EQ(w.rows_written(), 0);
  EXPECT_EQ(count(), 0);  // all or nothing per batch
  EXPECT_FALSE(store_->database().in_transaction());
  w.add(sample(1));
  w.flush();
  EXPECT_EQ(count(), 1);
}

TEST_F(SampleWriterTest, ReadBackInSendOrder) {
  {
    SampleWriter w = store_->sample_writer(run_);
    for (int i : {3, 1, 2}) w.add(sample(i));
  }
  std::vector<std::int64_t> sends;
  std::vector<std::optional<std::int64_t>> services;
  EXPECT_EQ(store_->for_each_sample(run_,
                                    [&](const Sample& s) {
                                      sends.push_back(s.send_ns);
                                      services.push_back(s.service_ns);
                                      EXPECT_EQ(s.source, TimestampSource::kSoftware);
                                      EXPECT_EQ(s.type_id, type_);
                                    }),
            3);
  EXPECT_EQ(sends, (std::vector<std::int64_t>{1000, 2000, 3000}));
  EXPECT_EQ(services, (std::vector<std::optional<std::int64_t>>{std::nullopt, std::nullopt, 3}));
  EXPECT_EQ(store_->for_each_sample(run_ + 1, [](const Sample&) {}), 0);
}

TEST_F(SampleWriterTest, FlushInsideACallersTransactionJoinsIt) {
  Database& db = store_->database();
  {
    Transaction outer(db);
    SampleWriter w = store_->sample_writer(run_);
    for (int i = 0; i < 10; ++i) w.add(sample(i));
    w.flush();
    EXPECT_EQ(count(), 10);  // visible inside the caller's transaction
  }                          // the caller rolls back: so do the samples
  EXPECT_EQ(count(), 0);
}

}  // namespace
}  // namespace nabla::db
