// A run as stored, its header and what it is missing, and its gradients with
// the campaign file's truth.
#include <set>

#include "charts.hh"
#include "nabla/common/json_null.hh"
#include "nabla/common/link_label.hh"
#include "nabla/db/records.hh"
#include "page_model.hh"

namespace nabla::report::detail {
namespace {

using common::parsed_or_null;

// Nodes with the processes the run's links name on them. A run that stored
// links but no nodes rows (nabla analyze, inject) still gets its hosts.
json nodes_json(const StoredRun& run) {
  std::map<std::string, std::set<std::string>> processes;
  std::vector<std::string> order;
  auto add_host = [&](const std::string& host) {
    if (processes.emplace(host, std::set<std::string>{}).second) order.push_back(host);
  };
  for (const db::Node& n : run.nodes) add_host(n.name);
  for (const db::LinkRow& l : run.links) {
    add_host(l.link.src_host);
    add_host(l.link.dst_host);
    if (l.link.src_comm) processes[l.link.src_host].insert(*l.link.src_comm);
    if (l.link.dst_comm) processes[l.link.dst_host].insert(*l.link.dst_comm);
  }
  json out = json::array();
  for (const std::string& host : order) {
    json address = nullptr;
    for (const db::Node& n : run.nodes) {
      if (n.name == host) address = or_null(n.address);
    }
    out.push_back(
        {{"name", host},
         {"address", address},
         {"processes", std::vector<std::string>(processes[host].begin(), processes[host].end())}});
  }
  return out;
}

// A complete run may store warnings in `error` (Store::finish_run).
std::vector<std::string> warnings(const StoredRun& run) {
  std::vector<std::string> out;
  if (run.info.status == db::RunStatus::kComplete && run.info.error) out.push_back(*run.info.error);
  for (const db::TailResultRow& t : run.tail_results) {
    if (t.result.ok) continue;
    out.push_back("rate " + short_number(t.result.rate_rps) + " rps, p" +
                  short_number(t.result.percentile) + " " + t.result.metric + ": n/a " +
                  t.result.reasons_json);
    break;  // the tail section lists every one
  }
  return out;
}

}  // namespace

json campaign_spec(const StoredRun& run) {
  if (run.campaign) return parsed_or_null(run.campaign->spec_json);
  return parsed_or_null(run.info.config_json);
}

StoredRun read_stored_run(db::Database& db, std::int64_t run_id) {
  StoredRun run;
  run.info = *db::find_run(db, run_id);
  run.summary = db::find_run_summary(db, run_id);
  if (run.info.campaign_id) run.campaign = db::find_campaign(db, *run.info.campaign_id);
  run.nodes = db::run_nodes(db, run_id);
  run.links = db::run_links(db, run_id);
  run.phases = db::run_phases(db, run_id);
  run.injections = db::run_injections(db, run_id);
  run.gradients = db::run_gradients(db, run_id);
  run.tail_results = db::run_tail_results(db, run_id);
  run.load_checks = db::run_load_checks(db, run_id);
  run.type_names = db::transaction_type_names(db);
  return run;
}

json table(std::vector<std::string> columns, json rows) {
  return {{"columns", std::move(columns)}, {"rows", std::move(rows)}};
}

json run_header(const StoredRun& run) {
  const db::RunInfo& r = run.info;
  json spec = campaign_spec(run);
  return {{"run_id", r.id},
          {"kind", db::to_string(r.kind)},
          {"status", db::to_string(r.status)},
          {"campaign", run.campaign ? json(run.campaign->name) : json(nullptr)},
          {"seed", or_null(r.seed)},
          {"started", run.summary ? json(run.summary->started) : json(nullptr)},
          {"started_ns", r.started_ns},
          {"duration_s", run.summary ? or_null(run.summary->duration_s) : json(nullptr)},
          {"tool_version", r.tool_version},
          {"error", r.status == db::RunStatus::kFailed ? or_null(r.error) : json(nullptr)},
          {"warnings", warnings(run)},
          {"nodes", nodes_json(run)},
          {"samples", run.summary ? run.summary->samples : 0},
          {"campaign_file", spec.is_null() ? json(nullptr) : json(spec.dump(2))}};
}

std::vector<std::string> missing_parts(const StoredRun& run) {
  std::vector<std::string> out;
  const bool campaign = run.info.kind == db::RunKind::kRun || run.info.kind == db::RunKind::kDemo;
  if (run.info.status == db::RunStatus::kRunning) {
    out.push_back("the run is still running: the page shows what it has stored so far");
  }
  if (campaign) {
    if (run.links.empty()) out.push_back("no links: discovery did not finish");
    bool trained = false;
    for (const db::PhaseRow& p : run.phases) trained |= p.phase.kind == db::PhaseKind::kTraining;
    if (!run.links.empty() && !trained) out.push_back("no training phase");
    for (const db::LinkRow& l : run.links) {
      bool measured = false;
      for (const db::GradientRow& g : run.gradients) measured |= g.link.id == l.id;
      if (!measured) out.push_back("link " + l.label + ": no gradients (not measured)");
    }
  }
  if (run.info.kind == db::RunKind::kLoad && run.tail_results.empty()) {
    out.push_back("no tail results: no rate point finished");
  }
  return out;
}

std::optional<double> truth_for(const StoredRun& run, const std::string& link_label,
                                const std::string& type) {
  const json spec = campaign_spec(run);
  if (!spec.is_object() || !spec.contains("truth")) return std::nullopt;
  const json& truth = spec["truth"];
  for (const db::LinkRow& l : run.links) {
    if (l.label != link_label) continue;
    const std::string key = common::campaign_link_label(
        l.link.proto, l.link.src_host, l.link.src_port, l.link.dst_host, l.link.dst_port);
    if (truth.contains(key) && truth[key].contains(type) && truth[key][type].is_number()) {
      return truth[key][type].get<double>();
    }
  }
  return std::nullopt;
}

json gradients_json(const StoredRun& run) {
  json out = json::array();
  for (const db::GradientRow& row : run.gradients) {
    const db::Gradient& g = row.gradient;
    out.push_back({{"link_id", row.link.id},
                   {"link", row.link.label},
                   {"type", row.type},
                   {"value", g.value},
                   {"ci_low", or_null(g.ci_low)},
                   {"ci_high", or_null(g.ci_high)},
                   {"confidence", g.confidence},
                   {"time_domain", or_null(g.time_domain)},
                   {"actual_amplitude_ns", or_null(g.actual_amplitude_ns)},
                   {"perturbation_ns", or_null(g.perturbation_ns)},
                   {"throughput_change", or_null(g.throughput_change)},
                   {"k_d", or_null(g.k_d)},
                   {"bins", or_null(g.bins)},
                   {"truth", or_null(truth_for(run, row.link.label, row.type))},
                   {"messages_per_txn", or_null(g.messages_per_txn)},
                   {"messages_ci_low", or_null(g.messages_ci_low)},
                   {"messages_ci_high", or_null(g.messages_ci_high)}});
  }
  return out;
}

}  // namespace nabla::report::detail
