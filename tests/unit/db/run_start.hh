#pragma once
// The run the db tests begin: a config, a tool version and seed 42.
#include <cstdint>

#include "nabla/db/records.hh"

namespace nabla::db::testing {

inline constexpr std::int64_t kT0 = 1'700'000'000'000'000'000;  // 2023-11-14T22:13:20Z

inline RunStart a_run(std::int64_t started_ns, RunKind kind = RunKind::kRun) {
  RunStart run;
  run.kind = kind;
  run.config_json = R"({"rate":1000})";
  run.tool_version = "0.1.0";
  run.seed = 42;
  run.started_ns = started_ns;
  return run;
}

}  // namespace nabla::db::testing
