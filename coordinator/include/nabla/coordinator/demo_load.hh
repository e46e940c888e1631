#pragma once
// The demo's tail-latency step: one `nabla load` measurement against the
// demo service, run as a child inside the client namespace with the demo
// database and --json, summarised as its verdict and p99 with CI.
#include <functional>
#include <nlohmann/json.hpp>
#include <string>

#include "nabla/coordinator/demo_testbed.hh"

namespace nabla::coordinator {

struct DemoLoadResult {
  bool ran = false;     // the measurement ran to the end (a verdict of n/a still ran)
  nlohmann::json json;  // `nabla load --json` output, or {"error": ...}
  std::string summary;  // one or two lines for the terminal
};

// "nabla load: verdict ok at 998 requests/s; p99 1.23 ms, 95% CI [1.2, 1.3] ms"
// (plus the reasons of an n/a) from `nabla load --json` output: one point
// object, or a list of them under "points" (the first is used).
std::string summarize_load(const nlohmann::json& load_json);

DemoLoadResult run_demo_load(const DemoBinaries& binaries, DemoTestbed& testbed,
                             const std::string& db_path, bool quick,
                             const std::function<bool()>& interrupted);

}  // namespace nabla::coordinator
