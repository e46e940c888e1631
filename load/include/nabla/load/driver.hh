#pragma once
// `nabla load`'s measurement as a library: the self-correcting controller
// (loadgen/controller.hh) at each rate point in turn, every point stored as
// it ends, the run ended complete or failed.
//
//   DriverConfig (controller, rates, clock, runner, target)
//     ──run_rate_points──▶ LoadRunResult (each point's ControllerResult)
//                      └──▶ LoadStore (record.hh): add_point per rate,
//                           complete() / fail(error)
//
// Seams, so the policy is tested without root, sockets or wall time: the
// controller's clock, the RoundRunner that runs each round (rounds.hh: one
// local engine, or load agents), the store, and the callbacks (progress after
// every round, which may throw to stop the run; each point once stored).
//
// Failure. Anything that throws (the runner, a callback, the store) ends the
// run: on_error runs (e.g. stop the agents), the run is stored failed with
// the error, and the exception goes on to the caller. A point the controller
// could not finish (ControllerResult::failure, an agent lost) is stored with
// what was measured, then fails the run the same way. A point whose last
// round could not connect is no measurement: the run fails naming the
// target.
#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "nabla/load/record.hh"
#include "nabla/load/workload.hh"
#include "nabla/loadgen/controller.hh"

namespace nabla::load {

struct DriverConfig {
  loadgen::ControllerConfig controller;  // everything but the rate (set per point)
  std::vector<double> rates;             // in order
  loadgen::MonotonicClock clock;         // the controller's
  loadgen::RoundRunner runner;           // empty: one local engine on `clock`
  Target target;                         // named when it cannot be reached
};

struct RatePoint {
  double rate = 0;
  loadgen::ControllerConfig config;  // as measured (the rate set)
  loadgen::ControllerResult result;
  std::optional<std::int64_t> samples_stored;  // with a store
};

struct LoadRunResult {
  std::vector<RatePoint> points;
  std::optional<std::int64_t> run_id;  // with a store
};

struct DriverHooks {
  LoadStore* store = nullptr;  // null: nothing is stored
  // After every round of the point at `rate`; may throw to stop the run.
  std::function<void(double rate, const loadgen::ControllerProgress&)> progress;
  // Once a point is measured and stored.
  std::function<void(const RatePoint&)> point_done;
  // After the last point, before the run is stored complete (what else the
  // run stores, e.g. memory latency).
  std::function<void()> before_complete;
  // When the run fails, before it is stored failed; must not throw.
  std::function<void()> on_error;
};

LoadRunResult run_rate_points(const DriverConfig& config, const DriverHooks& hooks);

// Throws std::runtime_error when the point's last round could not
// (re)connect: "cannot connect to H:P (...)" when nothing was ever answered,
// else "lost the target H:P: ...".
void require_reachable(const loadgen::ControllerResult& result, const Target& target);

}  // namespace nabla::load
