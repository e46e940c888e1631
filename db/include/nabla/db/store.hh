#pragma once
// Typed access to the run history: one Store per connection. The writers
// are here; the reads are functions on a Database in reads.hh (get_run and
// list_runs below are two of them).
//
// Opening read-write migrates the schema to the newest version and marks as
// 'failed' every 'running' run whose owning process is gone (see
// recover_interrupted_runs). Opening read-only (for `nabla sql`) does
// neither and requires the current schema.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "nabla/db/process_identity.hh"
#include "nabla/db/records.hh"
#include "nabla/db/sample_writer.hh"
#include "nabla/db/sqlite.hh"

namespace nabla::db {

class Store {
 public:
  // Read-write; creates the file if needed. `now_ns` (wall clock) stamps the
  // end of runs found interrupted.
  static Store open(const std::string& path, std::int64_t now_ns);
  static Store open_read_only(const std::string& path);

  Database& database() { return db_; }

  std::int64_t create_campaign(const Campaign& campaign);

  // Inserts a 'running' run owned by this process and returns its id.
  std::int64_t begin_run(const RunStart& run);
  // Ends a running run. `error` is required for kFailed (and stored for
  // kComplete if given, e.g. warnings). Throws if the run is not running.
  void finish_run(std::int64_t run_id, RunStatus status, std::int64_t ended_ns,
                  std::optional<std::string> error = std::nullopt);

  std::optional<RunInfo> get_run(std::int64_t run_id);
  // Newest first; limit <= 0 means all.
  std::vector<RunInfo> list_runs(int limit = 0);

  std::int64_t add_node(const Node& node);
  std::int64_t add_link(const Link& link);
  std::int64_t add_flow(const Flow& flow);
  std::int64_t add_phase(const Phase& phase);
  void end_phase(std::int64_t phase_id, std::int64_t ended_ns);
  std::int64_t add_injection(const Injection& injection);
  std::int64_t add_gradient(const Gradient& gradient);
  std::int64_t add_gradient_amplitude(const GradientAmplitude& amplitude);
  std::int64_t add_tail_result(const TailResult& result);
  std::int64_t add_load_check(const LoadCheck& check);
  std::int64_t add_load_agent(const LoadAgent& agent);
  std::int64_t add_memlat_sample(const MemlatSample& sample);
  std::int64_t add_memlat_probe_point(const MemlatProbePoint& point);
  std::int64_t add_accel_result(const AccelResult& result);
  std::int64_t add_accel_projection(const AccelProjection& projection);
  std::int64_t add_experiment(const Experiment& experiment);
  std::int64_t add_experiment_check(const ExperimentCheck& check);

  // Id of a transaction type name, inserting it on first use (cached).
  std::int64_t transaction_type_id(std::string_view name);

  SampleWriter sample_writer(std::int64_t run_id,
                             std::size_t batch_rows = SampleWriter::kDefaultBatchRows);
  // Streams a run's samples in send order without loading them all (for
  // export and offline analysis); returns the number of rows visited.
  std::int64_t for_each_sample(std::int64_t run_id,
                               const std::function<void(const Sample&)>& visit);

  // Marks failed every 'running' run whose owner (boot id, pid, pid start
  // time) is no longer running, with error "interrupted (process N no longer
  // running)" or "interrupted (host rebooted)", ended_ns = max(now_ns,
  // started_ns). Returns the ids marked. Called by open().
  std::vector<std::int64_t> recover_interrupted_runs(std::int64_t now_ns);

  // This process, as recorded in the rows begin_run() writes.
  const ProcessIdentity& owner() const { return owner_; }

 private:
  explicit Store(Database db);

  Database db_;
  ProcessIdentity owner_;
  std::unordered_map<std::string, std::int64_t> type_ids_;
};

}  // namespace nabla::db
