#pragma once
// What a campaign writes to the run history (db/schema.sql), in the order it
// happens, each step in its own transaction so a failure half-way keeps every
// finished step: campaign + run + nodes at the start; links after discovery;
// per phase its row, its injection (requested and actual delay), its samples
// (batched, phase_id set) and, for active phases, the gradients; the run's
// status last. Instants are stored as wall-clock ns: the campaign measures on
// CLOCK_MONOTONIC (its Clock) and converts with one offset taken at the start.
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "nabla/analysis/binning.hh"
#include "nabla/campaign/discover.hh"
#include "nabla/campaign/spec.hh"
#include "nabla/db/store.hh"

namespace nabla::campaign {

class CampaignRecorder {
 public:
  // Creates the campaign row (spec JSON), the 'running' run row (config =
  // the spec JSON plus the seed) and the nodes. `monotonic_now_ns` is the
  // campaign clock's now, paired with the wall clock for wall_ns.
  CampaignRecorder(db::Store& store, const CampaignSpec& spec, db::RunKind kind, std::uint64_t seed,
                   const std::string& tool_version, std::int64_t monotonic_now_ns);

  std::int64_t run_id() const { return run_id_; }
  db::Database& store_database() { return store_.database(); }
  std::int64_t wall_ns(std::int64_t monotonic_ns) const { return monotonic_ns + offset_ns_; }

  // Returns the link's id.
  std::int64_t add_link(const Link& link);
  // One sniffer record of `node`, joined to `link_id` when it is that link's
  // sending side; seen over [first, last] (monotonic).
  void add_flow(const std::string& node, const FlowEnd& flow, std::optional<std::int64_t> link_id,
                std::int64_t first_seen_ns, std::int64_t last_seen_ns);
  std::int64_t add_phase(db::Phase phase);  // run_id filled in; times monotonic
  void end_phase(std::int64_t phase_id, std::int64_t ended_monotonic_ns);
  std::int64_t add_injection(db::Injection injection);  // times monotonic
  // Samples sent in [start, end) (monotonic), with their phase.
  void add_samples(std::int64_t phase_id, std::span<const analysis::LatencyRecord> records,
                   const std::vector<std::string>& type_names, db::TimestampSource source,
                   std::int64_t start_ns, std::int64_t end_ns);
  std::int64_t add_gradient(db::Gradient gradient);              // run_id filled in; returns its id
  void add_gradient_amplitude(db::GradientAmplitude amplitude);  // run_id filled in
  // run_id filled in, times monotonic; returns the experiment's id.
  std::int64_t add_experiment(db::Experiment experiment);
  void add_experiment_check(const db::ExperimentCheck& check);
  std::int64_t type_id(const std::string& name) { return store_.transaction_type_id(name); }
  // Ends the run once (later calls do nothing).
  void finish(db::RunStatus status, std::optional<std::string> error);
  bool finished() const { return finished_; }

 private:
  db::Store& store_;
  std::int64_t run_id_ = 0;
  std::int64_t offset_ns_ = 0;  // realtime - monotonic
  std::map<std::string, std::int64_t> node_ids_;
  bool finished_ = false;
};

}  // namespace nabla::campaign
