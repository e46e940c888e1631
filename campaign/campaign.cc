// The campaign's driver: the phases in order, the wait loop they share, and
// the run's end (complete, or failed with everything measured so far). The
// design is in campaign.hh.
#include "nabla/campaign/campaign.hh"

#include <algorithm>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <string>

#include "nabla/campaign/agent_load.hh"
#include "nabla/campaign/daemons.hh"
#include "phases.hh"

namespace nabla::campaign {

CampaignRun::CampaignRun(const CampaignSpec& spec_, const CampaignOptions& options_,
                         const CampaignEnvironment& env_, CampaignRecorder& recorder_,
                         CampaignOutcome& out_)
    : spec(spec_),
      options(options_),
      env(env_),
      out(out_),
      recorder(recorder_),
      leases(env_.daemons, spec_.gradient.lease_ns),
      rng_(out_.seed) {}

void CampaignRun::note(const std::string& line) {
  if (options.log != nullptr) *options.log << line << '\n' << std::flush;
}

void CampaignRun::wait_until(std::int64_t t_ns) {
  while (true) {
    check_cancel();
    const std::int64_t now = now_ns();
    leases.renew_due(now);
    if (now >= t_ns) return;
    // Not on the way out: what follows a wait (inject.start after a
    // warm-up) must not wait for a poll.
    if (on_wait_slice) on_wait_slice();
    report(now);
    env.clock.sleep_until(std::min(t_ns, now + kSliceNs));
  }
}

void CampaignRun::check_cancel() {
  if (options.cancel != nullptr && options.cancel->load() != 0) {
    out.interrupted = true;
    throw Interrupted("interrupted by signal " + std::to_string(options.cancel->load()));
  }
}

void CampaignRun::report(std::int64_t now) {
  if (!options.progress || now - last_report_ns_ < 250'000'000) return;
  last_report_ns_ = now;
  CampaignProgress p = progress_;
  if (p.bins_total > 0 && out.bin_width_ns > 0 && now > phase_start_ns_) {
    p.bins = std::min<std::size_t>(
        p.bins_total, static_cast<std::size_t>((now - phase_start_ns_) / out.bin_width_ns));
  }
  p.left_ns = deadline_ns > now ? deadline_ns - now : 0;
  options.progress(p);
}

void CampaignRun::set_phase(const std::string& name, std::size_t link, std::size_t links,
                            std::size_t bins, std::int64_t start_ns) {
  progress_ = CampaignProgress{name, link, links, 0, bins, 0};
  phase_start_ns_ = start_ns;
}

namespace {

constexpr std::chrono::milliseconds kConnectTimeout{3000};

std::optional<std::string> joined_warnings(const std::vector<std::string>& warnings) {
  if (warnings.empty()) return std::nullopt;
  std::string all;
  for (const std::string& w : warnings) all += (all.empty() ? "" : "; ") + w;
  return all;
}

std::uint64_t campaign_seed(const CampaignSpec& spec) {
  if (spec.seed) return *spec.seed;
  std::random_device rd;
  return ((static_cast<std::uint64_t>(rd()) << 32) | rd()) >> 1;  // < 2^63 for SQLite
}

void measure_gradients(CampaignRun& run) {
  train(run);
  std::size_t measurable = 0;
  for (const CampaignLink& l : run.out.links) measurable += l.measurable ? 1 : 0;
  if (run.spec.gradient.schedule == Schedule::kSimultaneous) {
    std::vector<CampaignLink*> links;
    for (CampaignLink& l : run.out.links) {
      if (l.measurable) links.push_back(&l);
    }
    measure_links_simultaneously(run, links);
    return;
  }
  revise_estimate_after_training(run, measurable);
  std::size_t index = 0;
  for (CampaignLink& l : run.out.links) {
    if (l.measurable) measure_link(run, l, ++index, measurable);
  }
}

// Discovery, the gradients (unless gradient.enabled is false), then the
// experiments, which can then compare what they observe with what the
// gradients predict.
void run_phases(CampaignRun& run) {
  discover(run);
  if (run.spec.gradient.enabled) measure_gradients(run);
  for (std::size_t i = 0; i < run.spec.experiments.size(); ++i) run_experiment(run, i);
}

// Creates the run row, runs `phases` and ends the run: complete, or failed
// with the error and everything stored so far. Throws only before the run
// row exists.
CampaignOutcome run_recorded(
    const CampaignSpec& spec, db::Store& store, const CampaignOptions& options, Clock& clock,
    const std::function<void(CampaignRecorder&, CampaignOutcome&)>& phases) {
  CampaignOutcome out;
  out.seed = campaign_seed(spec);
  CampaignRecorder recorder(store, spec, options.kind, out.seed, options.tool_version,
                            clock.now_ns());
  out.run_id = recorder.run_id();
  if (options.log != nullptr) {
    *options.log << "campaign " << spec.name << ": run " << out.run_id << ", seed " << out.seed
                 << '\n'
                 << std::flush;
  }
  try {
    phases(recorder, out);
    out.complete = true;
    recorder.finish(db::RunStatus::kComplete, joined_warnings(out.warnings));
  } catch (const std::exception& e) {
    out.complete = false;
    out.error = e.what();
    try {
      recorder.finish(db::RunStatus::kFailed, out.error);
    } catch (const std::exception& f) {
      out.error += std::string(" (and the run could not be marked failed: ") + f.what() + ")";
    }
  }
  return out;
}

}  // namespace

CampaignOutcome run_campaign(const CampaignSpec& spec, db::Store& store,
                             const CampaignOptions& options, const CampaignEnvironment& env) {
  return run_recorded(spec, store, options, env.clock,
                      [&](CampaignRecorder& recorder, CampaignOutcome& out) {
                        CampaignRun run(spec, options, env, recorder, out);
                        run_phases(run);
                      });
}

CampaignOutcome run_campaign(const CampaignSpec& spec, db::Store& store,
                             const CampaignOptions& options) {
  SystemClock clock;
  return run_recorded(
      spec, store, options, clock, [&](CampaignRecorder& recorder, CampaignOutcome& out) {
        // Checked and connected inside the run, so a node that cannot serve
        // the campaign, or a daemon it cannot reach, fails the stored run.
        if (options.check_nodes) options.check_nodes(spec);
        RpcDaemons daemons(spec, kConnectTimeout);
        // The load from here, or from the workload's agents (with the
        // campaign's key file, as its daemons).
        EngineLoadRunner engine;
        std::unique_ptr<loadd::AgentPool> agents;
        std::optional<AgentLoadRunner> from_agents;
        if (!spec.workload.agents.empty()) {
          agents = connect_campaign_agents(spec.workload.agents, spec.key_file,
                                           "nabla-run-" + std::to_string(recorder.run_id()));
          from_agents.emplace(
              agents->runner(), [pool = agents.get()] { pool->stop_all(); },
              [&clock] { return clock.now_ns(); });
        }
        LoadRunner& load = from_agents ? static_cast<LoadRunner&>(*from_agents) : engine;
        CampaignRun run(spec, options, CampaignEnvironment{clock, load, daemons}, recorder, out);
        run_phases(run);
      });
}

}  // namespace nabla::campaign
