// The discovery phase (with the bin width's calibration); see phases.hh.
#include <algorithm>
#include <stdexcept>

#include "load.hh"
#include "nabla/campaign/links.hh"
#include "nabla/common/units.hh"
#include "phase_store.hh"
#include "phases.hh"

namespace nabla::campaign {
namespace {

constexpr std::int64_t kSniffPollNs = 500'000'000;

// One flows.list per node with a sniffd, merged into `nodes` (cursors
// advanced).
void poll_sniffers(CampaignRun& run, std::vector<NodeFlows>& nodes,
                   std::vector<std::uint64_t>& cursors) {
  for (std::size_t i = 0; i < run.spec.nodes.size(); ++i) {
    const std::string& node = run.spec.nodes[i].name;
    std::optional<FlowsPage> page;
    try {
      page = run.env.daemons.list_flows(node, cursors[i]);
    } catch (const std::exception& e) {
      throw std::runtime_error("node " + node + ": flows.list failed: " + e.what());
    }
    if (!page) continue;
    const CampaignNode& n = run.spec.nodes[i];
    std::erase_if(page->flows, [&n](const FlowEnd& f) {
      return !flow_in_node_namespace(f, n.netns, n.container);
    });
    merge_flows(nodes[i].flows, page->flows);
    cursors[i] = page->cursor;
  }
}

// Waits until t0 + calib_ns, polling every sniffd meanwhile when the spec
// discovers links; returns the flows seen.
std::vector<NodeFlows> watch_flows(CampaignRun& run, std::int64_t t0, std::int64_t calib_ns) {
  const bool discovering = run.spec.links.discover;
  std::vector<NodeFlows> nodes;
  std::vector<std::uint64_t> cursors;
  for (const CampaignNode& n : run.spec.nodes) {
    nodes.push_back(NodeFlows{n.name, n.addresses, {}});
    cursors.push_back(0);
  }
  while (discovering) {
    poll_sniffers(run, nodes, cursors);
    const std::int64_t left = t0 + calib_ns - run.now_ns();
    if (left <= 0) break;
    run.wait_until(run.now_ns() + std::min(left, kSniffPollNs));
  }
  run.wait_until(t0 + calib_ns);
  if (discovering) poll_sniffers(run, nodes, cursors);  // flows seen during the last interval
  return nodes;
}

// The types and the bin width, from the calibration load (its first tenth
// is the connections' warm-up).
void calibrate(CampaignRun& run, const loadgen::EngineResult& r, std::int64_t t0,
               std::int64_t calib_ns) {
  run.out.types = r.type_names;
  std::vector<analysis::LatencyRecord> calib;
  for (const auto& x : to_records(r)) {
    if (x.t_ns >= t0 + calib_ns / 10) calib.push_back(x);
  }
  run.out.bin_width_ns =
      campaign_bin_width_ns(calib, run.spec.gradient.requests_per_bin, run.out.types);
  if (r.completed == 0) {
    throw std::runtime_error("the workload got no answer from " + run.spec.workload.target);
  }
}

// Per link, what a sweep adds (its amplitudes beyond the first, each a
// phase of N bins) and a step verification (its four windows).
std::int64_t sweep_and_step_ns(const CampaignRun& run) {
  const GradientSpec& g = run.spec.gradient;
  const std::int64_t w = run.out.bin_width_ns;
  const std::int64_t warmup = run.spec.workload.warmup_ns;
  std::int64_t ns = 0;
  if (g.amplitudes_ns.size() > 1) {
    ns += static_cast<std::int64_t>(g.amplitudes_ns.size() - 1) *
          (static_cast<std::int64_t>(g.bins) * w + warmup);
  }
  if (g.verify) ns += static_cast<std::int64_t>(step_phase_bins(g.bins)) * w + warmup;
  return ns;
}

std::string whole_ms(std::int64_t ns) {
  return common::format_duration_ns(ns / 1'000'000 * 1'000'000);
}

// What `repeats` more active phases of `phases` links (or of the one
// simultaneous phase) would add: each is N bins and a warm-up.
std::int64_t repeated_phases_ns(const CampaignRun& run, std::size_t phases, std::size_t bins) {
  const std::int64_t one =
      static_cast<std::int64_t>(bins) * run.out.bin_width_ns + run.spec.workload.warmup_ns;
  return static_cast<std::int64_t>(run.spec.gradient.repeats * phases) * one;
}

// The estimate's upper end, when a noisy phase may be measured again.
std::string if_repeated(const CampaignRun& run, std::int64_t extra_ns) {
  if (run.spec.gradient.repeats == 0 || extra_ns <= 0) return "";
  return "; up to " + whole_ms(extra_ns) + " more if every active phase is measured again";
}

// Notes the links and the time estimate; throws when none is measurable.
void plan(CampaignRun& run) {
  std::size_t measurable = 0;
  for (const CampaignLink& l : run.out.links) measurable += l.measurable ? 1 : 0;
  run.note(std::to_string(run.out.links.size()) + " links, " + std::to_string(measurable) +
           " measurable; bin width " + common::format_duration_ns(run.out.bin_width_ns));
  for (const CampaignLink& l : run.out.links) {
    if (!l.measurable) run.note("  not measured: " + l.label + " (" + l.note + ")");
  }
  if (measurable == 0) throw std::runtime_error("no measurable link (see the notes above)");
  std::int64_t experiments_ns = 0;
  for (const ExperimentSpec& e : run.spec.experiments) {
    experiments_ns += run.spec.workload.warmup_ns + e.baseline_ns + e.fault_ns + e.recovery_ns;
  }
  const GradientSpec& g = run.spec.gradient;
  if (!g.enabled) {
    run.out.budget_ns = experiments_ns;
    run.deadline_ns = run.now_ns() + experiments_ns;
    run.note(
        "estimated time: " + common::format_duration_ns(experiments_ns / 1'000'000 * 1'000'000) +
        " (" + std::to_string(run.spec.experiments.size()) + " experiments, no gradients)");
    return;
  }
  const bool together = g.schedule == Schedule::kSimultaneous;
  // Until training picks k_d, one adaptive cycle is taken as twice the
  // shortest period, plus the active phase's tail of two bins.
  const double period_bins = 2.0 * static_cast<double>(g.min_bins_per_period) + 2.0;
  // Simultaneous: the training at N, then two phases at the N the links'
  // frequencies need, which may be larger.
  const std::size_t phase_bins = together ? simultaneous_phase_bins(g, measurable) : g.bins;
  if (together) {
    run.out.budget_ns = campaign_budget_ns(run.out.bin_width_ns, g.bins, g.chunks, 0, period_bins,
                                           run.spec.workload.warmup_ns, 0) +
                        campaign_budget_ns(run.out.bin_width_ns, phase_bins, 0, 2, period_bins,
                                           run.spec.workload.warmup_ns, 0) +
                        experiments_ns;
  } else {
    run.out.budget_ns = campaign_budget_ns(run.out.bin_width_ns, g.bins, g.chunks, measurable,
                                           period_bins, run.spec.workload.warmup_ns, 0) +
                        experiments_ns;
  }
  run.out.budget_ns += static_cast<std::int64_t>(measurable) * sweep_and_step_ns(run);
  run.out.budget_if_repeated_ns =
      run.out.budget_ns + repeated_phases_ns(run, together ? 1 : measurable, phase_bins);
  run.deadline_ns = run.now_ns() + run.out.budget_ns;
  const std::string measuring =
      together ? "2 simultaneous phases of " + std::to_string(phase_bins) + " bins"
               : std::to_string(measurable) + " links x (" + std::to_string(g.bins) +
                     " bins + one cycle)";
  run.note("estimated time: " + whole_ms(run.out.budget_ns) + " (training " +
           std::to_string(g.chunks * g.bins) + " bins, then " + measuring +
           ", a warm-up before each phase)" +
           if_repeated(run, run.out.budget_if_repeated_ns - run.out.budget_ns));
}

}  // namespace

void revise_estimate_after_training(CampaignRun& run, std::size_t links) {
  const GradientSpec& g = run.spec.gradient;
  if (g.schedule != Schedule::kSequential || run.out.k_d <= 0 || links == 0) return;
  const std::int64_t w = run.out.bin_width_ns;
  const std::int64_t cycle_bins = static_cast<std::int64_t>(g.bins) / run.out.k_d;
  const std::int64_t tail = std::min<std::int64_t>(2 * w, 200'000'000);
  const std::int64_t per_link = (static_cast<std::int64_t>(g.bins) + cycle_bins) * w + tail +
                                2 * run.spec.workload.warmup_ns + sweep_and_step_ns(run);
  std::int64_t experiments_ns = 0;
  for (const ExperimentSpec& e : run.spec.experiments) {
    experiments_ns += run.spec.workload.warmup_ns + e.baseline_ns + e.fault_ns + e.recovery_ns;
  }
  const std::int64_t left = static_cast<std::int64_t>(links) * per_link + experiments_ns;
  const std::int64_t extra = repeated_phases_ns(run, links, g.bins);
  run.deadline_ns = run.now_ns() + left;
  run.note("estimated time left: " + whole_ms(left) + " (" + std::to_string(links) + " links x (" +
           std::to_string(g.bins) + " bins + a cycle of " + std::to_string(cycle_bins) +
           " at k_d = " + std::to_string(run.out.k_d) + "))" + if_repeated(run, extra));
}

void extend_estimate_for_repeat(CampaignRun& run, std::size_t bins) {
  run.deadline_ns +=
      static_cast<std::int64_t>(bins) * run.out.bin_width_ns + run.spec.workload.warmup_ns;
  const std::int64_t left = std::max<std::int64_t>(run.deadline_ns - run.now_ns(), 0);
  run.note("estimated time left: " + whole_ms(left) + " (with the phase measured again)");
}

void discover(CampaignRun& run) {
  const LinksSpec& ls = run.spec.links;
  const std::int64_t calib_ns =
      ls.discover ? std::max(ls.discover_for_ns, run.spec.workload.warmup_ns)
                  : std::max<std::int64_t>(run.spec.workload.warmup_ns, 1'000'000'000);
  const std::int64_t t0 = run.now_ns() + kEngineLeadNs;
  run.deadline_ns = t0 + calib_ns;
  run.set_phase("discovery", 0, 0, 0, t0);
  std::vector<NodeFlows> nodes;
  {
    const auto load = run.env.load.start(
        engine_config(run.spec.workload, calib_ns, run.next_seed(), run.tls_sessions), t0);
    nodes = watch_flows(run, t0, calib_ns);
    calibrate(run, load->take(), t0, calib_ns);
  }
  std::vector<Link> discovered;
  if (ls.discover) {
    JoinOptions jo;
    jo.min_messages = ls.min_messages;
    discovered = join_flows(nodes, jo);
  }
  run.out.links = assemble_links(run.spec, nodes, discovered);
  {
    db::Transaction tx(run.recorder.store_database());
    store_links(run, nodes, t0, t0 + calib_ns);
    tx.commit();
  }
  plan(run);
}

}  // namespace nabla::campaign
