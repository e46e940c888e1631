#pragma once
// Private to `nabla load`: the human tables and the run-history recorder.
#include <cstdint>
#include <iosfwd>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "nabla/coordinator/memlat_sampler.hh"
#include "nabla/db/store.hh"
#include "nabla/loadgen/controller.hh"

namespace nabla::coordinator {

// One rate point: verdict, reasons, the decisions, the percentile table.
void print_load_point(std::ostream& out, const nlohmann::json& point);
// Latency versus load: rate, achieved, p50 and p99 with CIs, verdict.
void print_load_sweep(std::ostream& out, const std::vector<nlohmann::json>& points);

// A run of kind 'load' in the history, begun on construction. Each rate
// point adds its tail_results rows and kept samples; complete() or fail()
// ends it. If neither was called (an exception unwound past it) the
// destructor marks it failed, so no run is left 'running'.
class LoadRunRecorder {
 public:
  LoadRunRecorder(const std::string& path, const nlohmann::json& config, std::uint64_t seed);
  ~LoadRunRecorder();
  LoadRunRecorder(const LoadRunRecorder&) = delete;
  LoadRunRecorder& operator=(const LoadRunRecorder&) = delete;

  std::int64_t run_id() const { return run_id_; }
  // Returns the number of samples written.
  std::int64_t add_point(const loadgen::ControllerResult& result,
                         const loadgen::ControllerConfig& config);
  // One memlat row per interval; `target` says what was sampled.
  void add_memlat(const std::vector<MemlatSampler::Interval>& intervals, const std::string& target,
                  const memlat::EstimatorConstants& constants);
  void complete();
  void fail(const std::string& error);

 private:
  db::Store store_;
  std::int64_t run_id_ = 0;
  bool finished_ = false;
};

}  // namespace nabla::coordinator
