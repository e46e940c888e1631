// Run-history writes of a campaign; see store.hh.
#include "nabla/campaign/store.hh"

#include <nlohmann/json.hpp>

#include "nabla/common/clock.hh"

namespace nabla::campaign {

CampaignRecorder::CampaignRecorder(db::Store& store, const CampaignSpec& spec, db::RunKind kind,
                                   std::uint64_t seed, const std::string& tool_version,
                                   std::int64_t monotonic_now_ns)
    : store_(store), offset_ns_(common::realtime_ns() - monotonic_now_ns) {
  nlohmann::json config = to_json(spec);
  config["seed"] = seed;
  db::Transaction tx(store_.database());
  const std::int64_t campaign_id =
      store_.create_campaign({spec.name, to_json(spec).dump(), common::realtime_ns()});
  db::RunStart run;
  run.campaign_id = campaign_id;
  run.kind = kind;
  run.config_json = config.dump();
  run.tool_version = tool_version;
  run.seed = static_cast<std::int64_t>(seed);
  run.started_ns = common::realtime_ns();
  run_id_ = store_.begin_run(run);
  for (const CampaignNode& n : spec.nodes) {
    // Aggregate-initialised: gcc 12 reports a false maybe-uninitialized on
    // assigning to the optionals of a default-constructed Node.
    const db::Node node{
        run_id_, n.name, std::optional<std::string>(n.addresses.front()),
        n.injectd ? std::optional<std::string>(n.injectd->to_string()) : std::nullopt,
        n.sniffd ? std::optional<std::string>(n.sniffd->to_string()) : std::nullopt};
    node_ids_[n.name] = store_.add_node(node);
  }
  tx.commit();
}

std::int64_t CampaignRecorder::add_link(const Link& l) {
  db::Link row;
  row.run_id = run_id_;
  row.proto = l.proto;
  row.src_host = l.src.host;
  if (l.src.known) {
    row.src_pid = l.src.pid;
    row.src_comm = l.src.comm;
  }
  row.src_port = l.src.port;
  row.dst_host = l.dst.host;
  if (l.dst.known) {
    row.dst_pid = l.dst.pid;
    row.dst_comm = l.dst.comm;
  }
  row.dst_port = l.dst.port;
  return store_.add_link(row);
}

void CampaignRecorder::add_flow(const std::string& node, const FlowEnd& f,
                                std::optional<std::int64_t> link_id, std::int64_t first_seen_ns,
                                std::int64_t last_seen_ns) {
  if (f.proto != "tcp" && f.proto != "udp") return;
  db::Flow row;
  row.run_id = run_id_;
  if (auto it = node_ids_.find(node); it != node_ids_.end()) row.node_id = it->second;
  row.link_id = link_id;
  row.proto = f.proto;
  row.local_addr = f.local_addr;
  row.local_port = f.local_port;
  row.remote_addr = f.remote_addr;
  row.remote_port = f.remote_port;
  if (f.pid > 0) {
    row.pid = f.pid;
    row.comm = f.comm;
  }
  // "unknown" (no handshake seen): the end with the ephemeral port is the client.
  row.direction = f.direction == "inbound"    ? "in"
                  : f.direction == "outbound" ? "out"
                  : f.local_port == 0         ? "out"
                                              : "in";
  row.segs_out = static_cast<std::int64_t>(f.segments_out);
  row.segs_in = static_cast<std::int64_t>(f.segments_in);
  row.bytes_out = static_cast<std::int64_t>(f.bytes_out);
  row.bytes_in = static_cast<std::int64_t>(f.bytes_in);
  row.first_seen_ns = wall_ns(first_seen_ns);
  row.last_seen_ns = wall_ns(last_seen_ns);
  store_.add_flow(row);
}

std::int64_t CampaignRecorder::add_phase(db::Phase phase) {
  phase.run_id = run_id_;
  phase.started_ns = wall_ns(phase.started_ns);
  if (phase.ended_ns) phase.ended_ns = wall_ns(*phase.ended_ns);
  return store_.add_phase(phase);
}

void CampaignRecorder::end_phase(std::int64_t phase_id, std::int64_t ended_monotonic_ns) {
  store_.end_phase(phase_id, wall_ns(ended_monotonic_ns));
}

std::int64_t CampaignRecorder::add_injection(db::Injection injection) {
  injection.run_id = run_id_;
  injection.started_ns = wall_ns(injection.started_ns);
  if (injection.ended_ns) injection.ended_ns = wall_ns(*injection.ended_ns);
  return store_.add_injection(injection);
}

void CampaignRecorder::add_samples(std::int64_t phase_id,
                                   std::span<const analysis::LatencyRecord> records,
                                   const std::vector<std::string>& type_names,
                                   db::TimestampSource source, std::int64_t start_ns,
                                   std::int64_t end_ns) {
  std::vector<std::int64_t> ids;
  for (const std::string& n : type_names) ids.push_back(store_.transaction_type_id(n));
  db::SampleWriter writer = store_.sample_writer(run_id_);
  for (const analysis::LatencyRecord& r : records) {
    if (r.t_ns < start_ns || r.t_ns >= end_ns) continue;
    db::Sample s;
    s.phase_id = phase_id;
    s.send_ns = wall_ns(r.t_ns);
    s.latency_ns = r.latency_ns;
    s.type_id = ids.at(static_cast<std::size_t>(r.type));
    s.source = source;
    writer.add(s);
  }
  writer.flush();
}

std::int64_t CampaignRecorder::add_gradient(db::Gradient gradient) {
  gradient.run_id = run_id_;
  return store_.add_gradient(gradient);
}

void CampaignRecorder::add_gradient_amplitude(db::GradientAmplitude amplitude) {
  amplitude.run_id = run_id_;
  store_.add_gradient_amplitude(amplitude);
}

std::int64_t CampaignRecorder::add_experiment(db::Experiment e) {
  e.run_id = run_id_;
  for (std::int64_t* t : {&e.started_ns, &e.fault_start_ns, &e.fault_end_ns, &e.ended_ns}) {
    *t = wall_ns(*t);
  }
  return store_.add_experiment(e);
}

void CampaignRecorder::add_experiment_check(const db::ExperimentCheck& check) {
  store_.add_experiment_check(check);
}

void CampaignRecorder::finish(db::RunStatus status, std::optional<std::string> error) {
  if (finished_) return;
  finished_ = true;
  store_.finish_run(run_id_, status, common::realtime_ns(), std::move(error));
}

}  // namespace nabla::campaign
