// The campaign's phases as rows of the run history; see phase_store.hh.
#include "phase_store.hh"

#include <cmath>
#include <nlohmann/json.hpp>

#include "load.hh"
#include "nabla/campaign/daemons.hh"
#include "nabla/common/protocol/injectd.hh"

namespace nabla::campaign {
namespace {

// The link a flow record is the sending side of, if it is one of ours.
std::optional<std::int64_t> sending_link(const CampaignRun& run, const std::string& node,
                                         const FlowEnd& f) {
  const CampaignNode* peer = run.spec.node_by_address(f.remote_addr);
  const std::string peer_host = peer != nullptr ? peer->name : f.remote_addr;
  for (const CampaignLink& l : run.out.links) {
    if (l.link.proto == f.proto && l.link.src.host == node && l.link.src.port == f.local_port &&
        l.link.dst.host == peer_host && l.link.dst.port == f.remote_port) {
      return l.link_id;
    }
  }
  return std::nullopt;
}

}  // namespace

std::int64_t store_injection(CampaignRun& run, std::int64_t phase_id, const CampaignLink& l,
                             const Injected& inj, double amplitude_ns, std::int64_t period_ns) {
  db::Injection row;
  row.phase_id = phase_id;
  row.link_id = l.link_id;
  row.node = l.src_node;
  const std::int64_t amplitude = std::llround(amplitude_ns);
  row.waveform = "square";
  row.spec_json = nlohmann::json{{"link", l.spec},
                                 {"id", inj.id},
                                 {"delay", square_wave_json(amplitude, period_ns, inj.cycles)}}
                      .dump();
  row.requested_delay_ns = amplitude;
  row.period_ns = period_ns;
  row.duty = 0.5;
  row.started_ns = inj.anchor_ns;
  row.ended_ns = inj.ended_ns;
  const InjectionStats& s = inj.stats;
  row.packets = s.packets;
  row.bytes = s.bytes;
  row.delayed = s.delayed;
  row.dropped = s.dropped;
  if (inj.measured) row.actual_mean_ns = inj.delta_l_ns;
  row.actual_std_ns = s.actual_std_ns;
  row.actual_p50_ns = s.actual_p50_ns;
  row.actual_p99_ns = s.actual_p99_ns;
  row.actual_max_ns = s.actual_max_ns;
  return run.recorder.add_injection(row);
}

void store_links(CampaignRun& run, const std::vector<NodeFlows>& nodes, std::int64_t first_seen_ns,
                 std::int64_t last_seen_ns) {
  for (CampaignLink& l : run.out.links) l.link_id = run.recorder.add_link(l.link);
  for (const NodeFlows& n : nodes) {
    for (const FlowEnd& f : n.flows) {
      run.recorder.add_flow(n.name, f, sending_link(run, n.name, f), first_seen_ns, last_seen_ns);
    }
  }
}

void store_training_phase(CampaignRun& run, const loadgen::EngineResult& result,
                          const std::vector<analysis::LatencyRecord>& records,
                          std::int64_t start_ns, std::int64_t window_ns) {
  const GradientSpec& g = run.spec.gradient;
  db::Phase p;
  p.kind = db::PhaseKind::kTraining;
  p.started_ns = start_ns;
  p.ended_ns = start_ns + window_ns;
  p.bin_width_ns = run.out.bin_width_ns;
  p.bins = static_cast<std::int64_t>(g.bins);
  p.chunks = static_cast<std::int64_t>(g.chunks);
  p.k_d = run.kd.k_d;
  p.amplitude_ns = std::llround(run.out.training_amplitude_ns);
  const std::int64_t id = run.recorder.add_phase(p);
  run.recorder.add_samples(id, records, run.out.types, db_source(result), start_ns,
                           start_ns + window_ns);
}

std::int64_t store_injected_phase(CampaignRun& run, db::PhaseKind kind, const CampaignLink& l,
                                  const Injected& inj, double amplitude_ns, std::int64_t bins,
                                  const loadgen::EngineResult& result,
                                  const std::vector<analysis::LatencyRecord>& records,
                                  std::int64_t window_ns) {
  db::Phase p;
  p.kind = kind;
  p.link_id = l.link_id;
  p.started_ns = inj.anchor_ns;
  p.ended_ns = inj.ended_ns;
  p.bin_width_ns = run.out.bin_width_ns;
  p.bins = bins;
  p.k_d = run.kd.k_d;
  p.amplitude_ns = std::llround(amplitude_ns);
  const std::int64_t id = run.recorder.add_phase(p);
  store_injection(run, id, l, inj, amplitude_ns,
                  inj.period_ns > 0 ? inj.period_ns : run.out.period_ns);
  run.recorder.add_samples(id, records, run.out.types, db_source(result), inj.anchor_ns,
                           inj.anchor_ns + window_ns);
  return id;
}

std::vector<std::int64_t> store_gradients(CampaignRun& run, const CampaignLink& l,
                                          const LinkMeasurement& m, std::int64_t phase_id) {
  const GradientSpec& g = run.spec.gradient;
  std::vector<std::int64_t> ids;
  for (const TypeGradient& tg : m.gradients) {
    db::Gradient row;
    row.link_id = l.link_id;
    row.type_id = run.recorder.type_id(tg.type);
    row.phase_id = phase_id;
    row.value = tg.estimate.value;
    row.ci_low = tg.estimate.ci_low;
    row.ci_high = tg.estimate.ci_high;
    row.confidence = g.confidence;
    if (std::isfinite(tg.estimate.time_domain_value)) {
      row.time_domain = tg.estimate.time_domain_value;
    }
    row.actual_amplitude_ns = tg.actual_amplitude_ns;
    row.perturbation_ns = tg.perturbation_ns;
    row.throughput_change = tg.throughput_change;
    row.k_d = m.k_d;
    row.bins = static_cast<std::int64_t>(m.bins);
    row.schedule = m.simultaneous ? "simultaneous" : "sequential";
    if (tg.messages) {
      row.messages_per_txn = tg.messages->value;
      row.messages_ci_low = tg.messages->ci_low;
      row.messages_ci_high = tg.messages->ci_high;
    }
    if (tg.step) {
      row.step_value = tg.step->value;
      row.step_ci_low = tg.step->ci_low;
      row.step_ci_high = tg.step->ci_high;
    }
    ids.push_back(run.recorder.add_gradient(row));
  }
  return ids;
}

void store_sweep(CampaignRun& run, const LinkMeasurement& m,
                 const std::vector<std::int64_t>& gradient_ids) {
  for (const SweepAmplitude& a : m.sweep) {
    for (std::size_t t = 0; t < a.gradients.size() && t < gradient_ids.size(); ++t) {
      const TypeGradient& tg = a.gradients[t];
      db::GradientAmplitude row;
      row.gradient_id = gradient_ids[t];
      row.phase_id = a.phase_id;
      row.amplitude_ns = a.requested_ns;
      row.actual_amplitude_ns = tg.actual_amplitude_ns;
      row.value = tg.estimate.value;
      row.ci_low = tg.estimate.ci_low;
      row.ci_high = tg.estimate.ci_high;
      run.recorder.add_gradient_amplitude(row);
    }
  }
}

}  // namespace nabla::campaign
