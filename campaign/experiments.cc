// The fault experiments of a campaign; see phases.hh and docs/method.md,
// "Fault experiments".
#include <algorithm>
#include <cmath>
#include <memory>
#include <stdexcept>

#include "injections.hh"
#include "load.hh"
#include "nabla/analysis/distributions.hh"
#include "nabla/common/units.hh"
#include "phases.hh"
#include "run_state.hh"

namespace nabla::campaign {
namespace {

// The measurable links an experiment names, by label or by source node.
std::vector<const CampaignLink*> experiment_links(const CampaignRun& run, std::size_t index) {
  const ExperimentSpec& e = run.spec.experiments[index];
  const std::string key = "experiment[" + std::to_string(index) + "]";
  std::vector<const CampaignLink*> out;
  for (const std::string& label : e.links) {
    const auto it = std::find_if(run.out.links.begin(), run.out.links.end(),
                                 [&](const CampaignLink& l) { return l.label == label; });
    if (it == run.out.links.end())
      throw std::runtime_error(key + ".links: no link \"" + label + "\"");
    if (!it->measurable) {
      throw std::runtime_error(key + ".links: \"" + label + "\" cannot be injected (" + it->note +
                               ")");
    }
    out.push_back(&*it);
  }
  for (const std::string& node : e.nodes) {
    std::size_t found = 0;
    for (const CampaignLink& l : run.out.links) {
      if (l.measurable && l.src_node == node &&
          std::find(out.begin(), out.end(), &l) == out.end()) {
        out.push_back(&l);
        ++found;
      }
    }
    if (found == 0) throw std::runtime_error(key + ".nodes: no measurable link leaves " + node);
  }
  return out;
}

struct Windows {
  std::int64_t baseline_start_ns = 0, fault_start_ns = 0, fault_end_ns = 0;
  std::int64_t recovery_start_ns = 0, recovery_end_ns = 0;
};

// One link the fault was on, and what its injector reported.
struct FaultOnLink {
  const CampaignLink* link = nullptr;
  InjectionStats stats;
};

// Starts the fault on every link at the baseline's end, holds it for the
// fault window and stops it; fills the windows' limits.
std::vector<FaultOnLink> inject_fault(CampaignRun& run, const ExperimentSpec& e,
                                      const std::vector<const CampaignLink*>& links, Windows& w) {
  run.wait_until(w.fault_start_ns);
  std::vector<std::unique_ptr<LinkInjections>> active;
  for (const CampaignLink* l : links) {
    InjectionRequest request;
    request.link_spec = l->spec;
    request.lease_ns = run.spec.gradient.lease_ns;
    request.seed = run.next_seed() >> 1;
    request.netns = run.spec.node_by_name(l->src_node)->netns;
    request.fault = e.request;
    // Every address family of a dual-stack link, as the gradient phases do.
    active.push_back(
        std::make_unique<LinkInjections>(run.env.daemons, run.leases, run.env.clock, *l, request));
  }
  w.fault_start_ns = run.now_ns();
  run.set_phase_start(w.fault_start_ns);
  run.wait_until(w.fault_start_ns + e.fault_ns);
  w.fault_end_ns = run.now_ns();
  std::vector<FaultOnLink> out;
  for (std::size_t i = 0; i < links.size(); ++i) out.push_back({links[i], active[i]->stop()});
  w.recovery_start_ns = run.now_ns();
  w.recovery_end_ns = w.recovery_start_ns + e.recovery_ns;
  return out;
}

struct WindowData {
  std::vector<double> latencies_ns;
  std::vector<std::int32_t> types;
  std::size_t scheduled = 0;
};

WindowData window_data(const loadgen::EngineResult& r, std::int64_t from_ns, std::int64_t to_ns) {
  WindowData d;
  for (const loadgen::Sample& s : r.samples) {
    if (s.intended_ns < from_ns || s.intended_ns >= to_ns) continue;
    d.latencies_ns.push_back(static_cast<double>(s.latency_ns));
    d.types.push_back(static_cast<std::int32_t>(s.type));
  }
  d.scheduled = static_cast<std::size_t>(
      std::lower_bound(r.intended_ns.begin(), r.intended_ns.end(), to_ns) -
      std::lower_bound(r.intended_ns.begin(), r.intended_ns.end(), from_ns));
  return d;
}

// The delay the injector added per packet it saw, over every link's halves.
std::optional<double> mean_delay_ns(const InjectionStats& s) {
  const std::size_t n = s.high.count + s.low.count;
  if (n == 0) return std::nullopt;
  return (static_cast<double>(s.high.count) * s.high.mean_ns +
          static_cast<double>(s.low.count) * s.low.mean_ns) /
         static_cast<double>(n);
}

bool pure_delay(const common::FaultRequest& r) {
  const common::protocol::Faults& f = r.faults;
  return r.delay && !f.loss && !f.partition && !f.reorder && !f.corrupt && !f.duplicate &&
         !f.rate_limit;
}

// Σ over links of (the link's gradient, weighted by the fault window's type
// mix) × the delay it actually got; the CI treats a link's types as fully
// correlated and the links as independent.
void predict(const CampaignRun& run, const std::vector<FaultOnLink>& injected,
             const WindowData& fault, ExperimentOutcome& out) {
  const std::size_t types = run.out.types.size();
  std::vector<double> share(types, 0.0);
  for (std::int32_t t : fault.types) {
    if (t >= 0 && static_cast<std::size_t>(t) < types) share[static_cast<std::size_t>(t)] += 1.0;
  }
  for (double& s : share) s /= std::max<double>(1.0, static_cast<double>(fault.types.size()));
  double predicted = 0, variance = 0;
  for (const FaultOnLink& i : injected) {
    const auto m = std::find_if(run.out.measurements.begin(), run.out.measurements.end(),
                                [&](const LinkMeasurement& x) { return x.label == i.link->label; });
    const std::optional<double> delay = mean_delay_ns(i.stats);
    if (m == run.out.measurements.end() || m->gradients.size() != types || !delay) return;
    double g = 0, se = 0;
    for (std::size_t t = 0; t < types; ++t) {
      g += share[t] * m->gradients[t].estimate.value;
      se += share[t] * m->gradients[t].estimate.standard_error;
    }
    predicted += g * *delay;
    variance += (se * *delay) * (se * *delay);
  }
  const double z = analysis::normal_quantile((1.0 + run.spec.gradient.confidence) / 2.0);
  out.predicted_change_ns = predicted;
  out.predicted_ci_ns =
      Interval{predicted - z * std::sqrt(variance), predicted + z * std::sqrt(variance)};
}

constexpr const char* kWindowNames[] = {"baseline", "fault", "recovery"};

// The samples of the three windows, in that order.
std::vector<WindowData> windows_data(const loadgen::EngineResult& r, const Windows& w) {
  return {window_data(r, w.baseline_start_ns, w.fault_start_ns),
          window_data(r, w.fault_start_ns, w.fault_end_ns),
          window_data(r, w.recovery_start_ns, w.recovery_end_ns)};
}

ExperimentOutcome judge_experiment(const CampaignRun& run, const ExperimentSpec& e,
                                   const std::vector<WindowData>& data, const Windows& w,
                                   const std::vector<FaultOnLink>& injected) {
  const double confidence = run.spec.gradient.confidence;
  const std::int64_t lengths[] = {w.fault_start_ns - w.baseline_start_ns,
                                  w.fault_end_ns - w.fault_start_ns,
                                  w.recovery_end_ns - w.recovery_start_ns};
  std::vector<ExperimentWindow> stats;
  for (std::size_t i = 0; i < 3; ++i) {
    stats.push_back(experiment_window(data[i].latencies_ns, data[i].scheduled, lengths[i],
                                      e.slo.percentiles, confidence));
  }
  ExperimentOutcome out;
  out.name = e.name;
  for (const FaultOnLink& i : injected) out.links.push_back(i.link->label);
  for (std::size_t i = 0; i < 3; ++i) {
    const auto checks = check_window(kWindowNames[i], stats[i], stats[0], e.slo, confidence);
    out.checks.insert(out.checks.end(), checks.begin(), checks.end());
  }
  std::vector<TermCheck> judged;
  std::copy_if(out.checks.begin(), out.checks.end(), std::back_inserter(judged),
               [](const TermCheck& c) { return c.window != "baseline"; });
  out.verdict = overall_verdict(judged);
  double delayed = 0, weight = 0;
  for (const FaultOnLink& i : injected) {
    const auto d = mean_delay_ns(i.stats);
    if (!d) continue;
    const double n = static_cast<double>(i.stats.high.count + i.stats.low.count);
    delayed += *d * n;
    weight += n;
  }
  if (weight > 0) out.mean_delay_ns = delayed / weight;
  out.observed_change_ns = stats[1].mean_ns - stats[0].mean_ns;
  if (stats[0].mean_ci_ns && stats[1].mean_ci_ns) {
    const auto half = [](const Interval& i) { return (i.high - i.low) / 2.0; };
    const double h = std::hypot(half(*stats[0].mean_ci_ns), half(*stats[1].mean_ci_ns));
    out.observed_ci_ns = Interval{out.observed_change_ns - h, out.observed_change_ns + h};
  }
  if (pure_delay(e.request)) predict(run, injected, data[1], out);
  return out;
}

// The experiment's row and one row per term and window, in one transaction.
void store_experiment(CampaignRun& run, const ExperimentSpec& e, const Windows& w,
                      const ExperimentOutcome& o, const std::vector<WindowData>& data) {
  db::Experiment row;
  row.name = e.name;
  row.spec_json = to_json(e).dump();
  row.links_json = nlohmann::json(o.links).dump();
  row.started_ns = w.baseline_start_ns;
  row.fault_start_ns = w.fault_start_ns;
  row.fault_end_ns = w.fault_end_ns;
  row.ended_ns = w.recovery_end_ns;
  row.verdict = to_string(o.verdict);
  row.mean_delay_ns = o.mean_delay_ns;
  row.observed_change_ns = o.observed_change_ns;
  if (o.observed_ci_ns) {
    row.observed_ci_low_ns = o.observed_ci_ns->low;
    row.observed_ci_high_ns = o.observed_ci_ns->high;
  }
  row.predicted_change_ns = o.predicted_change_ns;
  if (o.predicted_ci_ns) {
    row.predicted_ci_low_ns = o.predicted_ci_ns->low;
    row.predicted_ci_high_ns = o.predicted_ci_ns->high;
  }
  db::Transaction tx(run.recorder.store_database());
  const std::int64_t id = run.recorder.add_experiment(row);
  for (const TermCheck& c : o.checks) {
    const std::size_t i = static_cast<std::size_t>(
        std::find(std::begin(kWindowNames), std::end(kWindowNames), c.window) -
        std::begin(kWindowNames));
    db::ExperimentCheck x;
    x.experiment_id = id;
    x.window = c.window;
    x.term = c.term;
    x.bound = c.bound;
    x.value = c.value;
    if (c.ci) {
      x.ci_low = c.ci->low;
      x.ci_high = c.ci->high;
    }
    x.verdict = to_string(c.verdict);
    x.extra_ns = c.extra_ns;
    if (!c.note.empty()) x.note = c.note;
    x.samples = static_cast<std::int64_t>(data[i].latencies_ns.size());
    x.scheduled =
        static_cast<std::int64_t>(std::max(data[i].scheduled, data[i].latencies_ns.size()));
    run.recorder.add_experiment_check(x);
  }
  tx.commit();
}

}  // namespace

void run_experiment(CampaignRun& run, std::size_t index) {
  const ExperimentSpec& e = run.spec.experiments[index];
  const std::vector<const CampaignLink*> links = experiment_links(run, index);
  const std::int64_t total_ns = e.baseline_ns + e.fault_ns + e.recovery_ns;
  run.note("experiment " + e.name + ": " + std::to_string(links.size()) + " link(s), " +
           common::format_duration_ns(e.baseline_ns) + " baseline, " +
           common::format_duration_ns(e.fault_ns) + " fault, " +
           common::format_duration_ns(e.recovery_ns) + " recovery");
  run.set_phase("experiment", index + 1, run.spec.experiments.size(), 0, 0);
  // Inject.start and inject.stop take time between the windows: the load
  // runs a slack longer so the recovery window still ends inside it.
  const auto [load, warm_ns] = start_warm_load(run, total_ns + kEngineSlackNs);
  Windows w;
  w.baseline_start_ns = warm_ns;
  w.fault_start_ns = warm_ns + e.baseline_ns;
  std::vector<FaultOnLink> injected = inject_fault(run, e, links, w);
  const std::int64_t load_end_ns = warm_ns + total_ns + 2 * kEngineSlackNs;
  if (w.recovery_end_ns > load_end_ns) {
    throw std::runtime_error("experiment " + e.name +
                             ": inject.start and inject.stop took longer than " +
                             common::format_duration_ns(kEngineSlackNs));
  }
  run.wait_until(w.recovery_end_ns);
  const std::vector<WindowData> data = windows_data(load->take(), w);
  ExperimentOutcome o = judge_experiment(run, e, data, w, injected);
  store_experiment(run, e, w, o, data);
  run.note("experiment " + e.name + ": " + std::string(to_string(o.verdict)));
  run.out.experiments.push_back(std::move(o));
}

}  // namespace nabla::campaign
