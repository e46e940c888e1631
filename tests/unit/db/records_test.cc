#include "nabla/db/records.hh"

#include <gtest/gtest.h>

#include <stdexcept>

namespace nabla::db {
namespace {

TEST(Records, NamesMatchTheSchemaAndRoundTrip) {
  EXPECT_EQ(to_string(RunKind::kRun), "run");
  EXPECT_EQ(to_string(RunKind::kInject), "inject");
  EXPECT_EQ(to_string(RunStatus::kFailed), "failed");
  EXPECT_EQ(to_string(PhaseKind::kBaseline), "baseline");
  EXPECT_EQ(to_string(TimestampSource::kHardware), "hardware");
  for (auto k :
       {RunKind::kRun, RunKind::kLoad, RunKind::kDemo, RunKind::kAnalyze, RunKind::kInject}) {
    EXPECT_EQ(parse_run_kind(to_string(k)), k);
  }
  for (auto s : {RunStatus::kRunning, RunStatus::kComplete, RunStatus::kFailed}) {
    EXPECT_EQ(parse_run_status(to_string(s)), s);
  }
  for (auto k :
       {PhaseKind::kTraining, PhaseKind::kAdaptive, PhaseKind::kActive, PhaseKind::kBaseline}) {
    EXPECT_EQ(parse_phase_kind(to_string(k)), k);
  }
}

TEST(Records, UnknownNamesAreErrorsThatQuoteTheValue) {
  try {
    parse_run_status("done");
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "unknown run status 'done'");
  }
  EXPECT_THROW(parse_run_kind("Run"), std::invalid_argument);
  EXPECT_THROW(parse_phase_kind("warmup"), std::invalid_argument);
}

}  // namespace
}  // namespace nabla::db
