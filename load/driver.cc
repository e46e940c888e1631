// The rate-point loop of a load run; see driver.hh.
#include "nabla/load/driver.hh"

#include <stdexcept>
#include <string>
#include <utility>

namespace nabla::load {

void require_reachable(const loadgen::ControllerResult& r, const Target& target) {
  if (r.rounds.empty() || r.rounds.back().errors.connect == 0) return;
  const std::string where = target.host + ":" + std::to_string(target.port);
  const auto& last = r.rounds.back().errors;
  if (r.completed == 0 && r.errors.server == 0) {
    throw std::runtime_error(
        "cannot connect to " + where + " (" + std::to_string(r.errors.connect) + " connect errors" +
        (r.setup.first_error.empty() ? "" : "; first: " + r.setup.first_error) + ")");
  }
  throw std::runtime_error(
      "lost the target " + where + ": round " + std::to_string(r.rounds.back().index) +
      " could not connect (" + std::to_string(last.connect) + " connect errors, " +
      std::to_string(last.read) + " read errors) after " + std::to_string(r.completed) +
      " requests answered; the server is down or refuses connections");
}

LoadRunResult run_rate_points(const DriverConfig& config, const DriverHooks& hooks) {
  LoadRunResult out;
  LoadStore* store = hooks.store;
  if (store) out.run_id = store->run_id();
  try {
    for (double rate : config.rates) {
      RatePoint point;
      point.rate = rate;
      point.config = config.controller;
      point.config.engine.schedule.rate_per_s = rate;
      if (config.runner) point.config.runner = config.runner;
      loadgen::ProgressCallback progress;
      if (hooks.progress) {
        progress = [&](const loadgen::ControllerProgress& p) { hooks.progress(rate, p); };
      }
      point.result = loadgen::run_controller(point.config, config.clock, progress);
      if (point.result.failure) {
        // What was measured is stored; the run fails.
        if (store) store->add_point(point.result, point.config);
        throw std::runtime_error(*point.result.failure);
      }
      require_reachable(point.result, config.target);
      if (store) point.samples_stored = store->add_point(point.result, point.config);
      if (hooks.point_done) hooks.point_done(point);
      out.points.push_back(std::move(point));
    }
    if (hooks.before_complete) hooks.before_complete();
    if (store) store->complete();
  } catch (const std::exception& e) {
    if (hooks.on_error) hooks.on_error();
    if (store) store->fail(e.what());
    throw;
  }
  return out;
}

}  // namespace nabla::load
