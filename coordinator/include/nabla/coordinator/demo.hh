#pragma once
// `nabla demo [--quick] [--db ./nabla-demo.db] [--json] [--keep-logs DIR] [--report FILE]`:
// the whole tool on this machine in one command (needs root).
//
//   1. build the namespace testbed with the RUBiS-like service and both
//      daemons on every host (testbed/demo_testbed.hh);
//   2. write the campaign file ([truth] from the tiers' call patterns) and run
//      `nabla run --kind demo` as a child inside the client namespace, with
//      the demo database;
//   3. read the run's gradients back and print them beside the truth with a
//      PASS/FAIL column (check_gradient);
//   4. one `nabla load` tail measurement against the same service
//      (testbed/demo_load.hh); with --report, the campaign run's HTML page
//      (nabla report);
//   5. remove everything (RAII), also on Ctrl-C/SIGTERM/SIGHUP and errors.
//
// Simultaneous confidence. A 95% CI misses its truth 5% of the time, so with
// 20+ gradients some miss by chance alone. The demo asks `nabla run` for
// per-gradient confidence 1 - 0.05/K (Bonferroni over the K gradients whose
// truth is non-zero; CIs of zero-truth gradients contain 0 by construction,
// analysis/gradient.hh), which makes "every CI contains its truth" a 95%
// statement about the whole table.
//
// Exit codes: 0 everything ran and every gradient PASSes; 3 everything ran
// but at least one gradient FAILs (or an expected link was not measured);
// 1 something failed to run (the testbed, `nabla run`, the database);
// 2 bad flags; 130 interrupted (after cleaning up).
#include <cstdint>
#include <iosfwd>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "nabla/campaign/truth_check.hh"
#include "nabla/testbed/demo_service.hh"
#include "nabla/testbed/demo_testbed.hh"

namespace CLI {
class App;
}
namespace nabla::db {
class Database;
}

namespace nabla::coordinator {

inline constexpr int kDemoExitAccuracyFail = 3;
inline constexpr int kDemoExitInterrupted = 130;

struct DemoOptions {
  bool quick = false;
  std::string db_path = "nabla-demo.db";
  bool json = false;
  std::optional<std::string> keep_logs;
  std::uint64_t seed = 42;
  std::string schedule = "sequential";  // the campaign's [gradient] schedule
  bool schedule_given = false;          // --schedule was on the command line
  // --verify: a constant-delay step oracle on every link; --amplitudes: a
  // sweep. Both measure one link at a time, so they imply the sequential
  // schedule (with --schedule simultaneous they are a usage error).
  bool verify = false;
  std::vector<std::string> amplitudes;
  std::optional<std::string> report_path;  // --report FILE: the campaign run's page
};

// The campaign parameters of the full demo and of --quick (fewer links,
// smaller N; the quick demo measures web -> app and app -> db:8082, both
// directions of neither: the two request directions carry every pattern).
// The sequential schedule (the default) trains on 7 chunks of 256 bins
// (full) or 5 of 128 (quick); the simultaneous one on M = 2 chunks of
// N = 256.
testbed::DemoCampaign demo_campaign(const tier::ServiceModel& model, bool quick, std::uint64_t seed,
                                    const std::string& schedule = "sequential");

// Acceptance of one measured gradient against the truth: the rule and the
// check of a stored run are campaign/truth_check.hh's, shared with
// `nabla report`.
using campaign::check_gradient;
using campaign::check_run_gradients;
using campaign::GradientCheck;

// The checks as a table with a PASS/FAIL column, and as JSON.
void print_gradient_checks(const std::vector<GradientCheck>& checks, std::ostream& out);
nlohmann::json gradient_checks_json(const std::vector<GradientCheck>& checks);

// The demo's one-line account of its `nabla load` step from that command's
// --json output (one point, or {"sweep": [...]}, the first point told):
// verdict, throughput, p90/p99 with CIs, an n/a's reasons and the run the
// point was stored in.
std::string summarize_load(const nlohmann::json& load_json);

int run_demo(const DemoOptions& options, std::ostream& out, std::ostream& err);

void register_demo_command(CLI::App& app);

}  // namespace nabla::coordinator
