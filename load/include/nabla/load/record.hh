#pragma once
// What a load run leaves in the run history: the rows of each rate point
// (tail_results, the kept samples under a 'baseline' phase, load_checks,
// load_agents) and the run's end. LoadStore is the seam the driver
// (driver.hh) writes through; LoadRunRecorder is its SQLite implementation.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "nabla/db/records.hh"
#include "nabla/db/store.hh"
#include "nabla/loadgen/controller.hh"

namespace nabla::load {

// The self-correcting controller's checks of one rate point, in its order
// (rate reached, Anderson–Darling, late sends, closed loop from the last
// round; iid, stationarity, CI width from the series), as the load_checks
// table stores them (run_id 0: the caller sets it).
std::vector<db::LoadCheck> load_checks(const loadgen::ControllerResult& result,
                                       const loadgen::ControllerConfig& config);

// What each load agent did at one rate point, as the load_agents table
// stores them (run_id 0: the caller sets it); none for one local engine.
std::vector<db::LoadAgent> load_agents(const loadgen::ControllerResult& result);

// Where a load run is stored: begun before the first point, one add_point
// per rate point measured, then complete() or fail().
class LoadStore {
 public:
  virtual ~LoadStore() = default;
  virtual std::int64_t run_id() const = 0;
  // Returns the number of samples written.
  virtual std::int64_t add_point(const loadgen::ControllerResult& result,
                                 const loadgen::ControllerConfig& config) = 0;
  virtual void complete() = 0;
  virtual void fail(const std::string& error) = 0;
};

// A run of kind 'load' in the SQLite history, begun on construction. Each
// rate point adds its tail_results rows, kept samples, load_checks and
// load_agents rows; complete() or fail() ends it. If neither was called (an
// exception unwound past it) the destructor marks it failed, so no run is
// left 'running'.
class LoadRunRecorder : public LoadStore {
 public:
  LoadRunRecorder(const std::string& path, const nlohmann::json& config, std::uint64_t seed);
  ~LoadRunRecorder() override;
  LoadRunRecorder(const LoadRunRecorder&) = delete;
  LoadRunRecorder& operator=(const LoadRunRecorder&) = delete;

  std::int64_t run_id() const override { return run_id_; }
  std::int64_t add_point(const loadgen::ControllerResult& result,
                         const loadgen::ControllerConfig& config) override;
  // A memory-latency interval measured beside the run (`nabla load --memlat`).
  void add_memlat_sample(const db::MemlatSample& row);
  void complete() override;
  void fail(const std::string& error) override;

 private:
  db::Store store_;
  std::int64_t run_id_ = 0;
  bool finished_ = false;
};

}  // namespace nabla::load
