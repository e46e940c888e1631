#pragma once
// The demo's tail-latency step: one `nabla load` measurement against the
// demo service, run as a child inside the client namespace with the demo
// database and --json. How it is summarised for the terminal is the CLI's
// business (coordinator/demo.cc).
#include <functional>
#include <nlohmann/json.hpp>
#include <string>

#include "nabla/testbed/demo_testbed.hh"

namespace nabla::testbed {

struct DemoLoadResult {
  bool ran = false;      // the measurement ran to the end (a verdict of n/a still ran)
  bool skipped = false;  // this nabla has no `load` command (counts as ran)
  int exit_code = 0;     // of `nabla load`; -1 when it did not exit in time
  // `nabla load --json` output; {"skipped": ...}; or {"error": ..., "output": ...}.
  nlohmann::json json;
};

// Stops the measurement (SIGTERM) when `interrupted` returns true or after
// 3 minutes.
DemoLoadResult run_demo_load(const DemoBinaries& binaries, DemoTestbed& testbed,
                             const std::string& db_path, bool quick,
                             const std::function<bool()>& interrupted);

}  // namespace nabla::testbed
