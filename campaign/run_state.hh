#pragma once
// What one campaign's phases share (private to campaign/): the spec, the
// environment, the outcome being filled in, the run history, the held
// injections, the seed sequence, and the wait loop every phase spends its
// time in. The phases themselves are free functions (phases.hh), one file
// each.
#include <cstdint>
#include <functional>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "injections.hh"
#include "nabla/analysis/training.hh"
#include "nabla/campaign/campaign.hh"
#include "nabla/campaign/store.hh"
#include "nabla/loadgen/engine.hh"

namespace nabla::campaign {

// A load run starts this long after it is asked for (its first send).
inline constexpr std::int64_t kEngineLeadNs = 20'000'000;
// The engine runs past the window by this; it also bounds inject.start.
inline constexpr std::int64_t kEngineSlackNs = 300'000'000;
// Wait granularity: how soon a signal or a due lease is noticed.
inline constexpr std::int64_t kSliceNs = 50'000'000;

class Interrupted : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class CampaignRun {
 public:
  CampaignRun(const CampaignSpec& spec, const CampaignOptions& options,
              const CampaignEnvironment& env, CampaignRecorder& recorder, CampaignOutcome& out);

  const CampaignSpec& spec;
  const CampaignOptions& options;
  CampaignEnvironment env;
  CampaignOutcome& out;
  CampaignRecorder& recorder;
  LeaseKeeper leases;
  std::vector<analysis::TrainingResult> trainings;  // per type
  KdChoice kd;
  std::int64_t deadline_ns = 0;  // estimated end, for the progress line
  // The TLS sessions the workload's server issued: every phase's load run
  // resumes them (https, h2, grpcs workloads).
  std::shared_ptr<loadgen::TlsSessionCache> tls_sessions = loadgen::make_tls_session_cache();
  // Called at every slice of wait_until but the one it returns in, after the
  // leases are renewed (the message sampler's polls); must not throw.
  std::function<void()> on_wait_slice;

  std::int64_t now_ns() { return env.clock.now_ns(); }
  void note(const std::string& line);
  std::uint64_t next_seed() { return rng_(); }
  // Waits until `t_ns` in slices, renewing due leases and reporting
  // progress; throws Interrupted on the cancel flag and std::runtime_error on
  // a failed renewal.
  void wait_until(std::int64_t t_ns);
  void set_phase(const std::string& name, std::size_t link, std::size_t links, std::size_t bins,
                 std::int64_t start_ns);
  void set_phase_start(std::int64_t start_ns) { phase_start_ns_ = start_ns; }

 private:
  void check_cancel();
  void report(std::int64_t now_ns);

  std::mt19937_64 rng_;
  CampaignProgress progress_;
  std::int64_t phase_start_ns_ = 0;
  std::int64_t last_report_ns_ = 0;
};

}  // namespace nabla::campaign
