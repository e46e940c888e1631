// `nabla run`; see run_command.hh.
#include "nabla/coordinator/run_command.hh"

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cmath>
#include <iostream>
#include <memory>
#include <ostream>

#include "nabla/campaign/gradient_result.hh"
#include "nabla/campaign/hosts.hh"
#include "nabla/campaign/messages.hh"
#include "nabla/campaign/operating_point.hh"
#include "nabla/common/clock.hh"
#include "nabla/common/json_null.hh"
#include "nabla/common/resolve.hh"
#include "nabla/common/stop_signals.hh"
#include "nabla/common/units.hh"
#include "nabla/coordinator/nodes_command.hh"
#include "nabla/coordinator/report_command.hh"
#include "nabla/coordinator/text_table.hh"

#ifndef NABLA_VERSION
#define NABLA_VERSION "0.1.0"
#endif

namespace nabla::coordinator {

using campaign::CampaignLink;
using campaign::CampaignOptions;
using campaign::CampaignOutcome;
using campaign::CampaignProgress;
using campaign::CampaignSpec;
using campaign::LinkEnd;
using campaign::LinkMeasurement;
using campaign::TypeGradient;

namespace {

using common::or_null;
using ojson = nlohmann::ordered_json;

// The campaign's gradient rows folded per type (campaign/operating_point.hh).
std::vector<campaign::OperatingPointShift> operating_point_shifts_of(const CampaignOutcome& o) {
  std::vector<campaign::PhaseShift> rows;
  for (const LinkMeasurement& m : o.measurements) {
    for (const TypeGradient& g : m.gradients) rows.push_back({m.label, g.type, g.perturbation_ns});
  }
  return campaign::operating_point_shifts(rows, o.types, o.training_mean_ns);
}

std::string number_text(double v, int digits) {
  return std::isfinite(v) ? format_number(v, digits) : "-";
}

ojson end_json(const LinkEnd& e) {
  ojson j{{"host", e.host}, {"port", e.port}};
  if (e.known) {
    j["pid"] = e.pid;
    j["comm"] = e.comm;
  }
  return j;
}

}  // namespace

ojson outcome_to_json(const CampaignSpec& spec, const CampaignOutcome& o) {
  ojson j;
  j["run_id"] = o.run_id;
  j["status"] = o.complete ? "complete" : "failed";
  j["error"] = o.complete ? ojson(nullptr) : ojson(o.error);
  j["campaign"] = spec.name;
  j["seed"] = o.seed;
  j["types"] = o.types;
  j["bin_width_ns"] = o.bin_width_ns;
  j["bins"] = spec.gradient.bins;
  j["chunks"] = spec.gradient.chunks;
  j["k_d"] = o.k_d;
  j["period_ns"] = o.period_ns;
  j["training_amplitude_ns"] = o.training_amplitude_ns;
  j["confidence"] = spec.gradient.confidence;
  j["budget_ns"] = o.budget_ns;
  j["budget_if_repeated_ns"] = o.budget_if_repeated_ns;
  ojson training = ojson::array();
  for (std::size_t t = 0; t < o.types.size() && t < o.training_mean_ns.size(); ++t) {
    ojson x{{"type", o.types[t]},
            {"mean_latency_ns", o.training_mean_ns[t]},
            {"rate_rps", o.training_rate_rps[t]}};
    if (t < o.training_type_amplitude_ns.size()) {
      x["amplitude_ns"] = o.training_type_amplitude_ns[t];
    }
    training.push_back(std::move(x));
  }
  j["training"] = training;
  ojson links = ojson::array();
  for (const CampaignLink& l : o.links) {
    ojson x{{"label", l.label},
            {"spec", l.spec},
            {"proto", l.link.proto},
            {"src", end_json(l.link.src)},
            {"dst", end_json(l.link.dst)},
            {"segments", l.link.segments},
            {"measurable", l.measurable}};
    if (l.measurable) x["node"] = l.src_node;
    if (!l.note.empty()) x["note"] = l.note;
    for (const LinkMeasurement& m : o.measurements) {
      if (m.label != l.label) continue;
      x["training_amplitude_ns"] = m.training_amplitude_ns;
      x["amplitude_ns"] = m.amplitude_ns;
      x["actual_amplitude_ns"] = m.delta_l_ns;
      ojson rough = ojson::array();
      for (std::size_t t = 0; t < m.rough.size() && t < o.types.size(); ++t) {
        rough.push_back({{"type", o.types[t]},
                         {"gradient", m.rough[t].value},
                         {"z", or_null<ojson>(m.rough[t].z)},
                         {"clear", m.rough[t].clear}});
      }
      x["rough_gradients"] = rough;
    }
    links.push_back(std::move(x));
  }
  j["links"] = links;
  ojson grads = ojson::array();
  for (const LinkMeasurement& m : o.measurements) {
    for (std::size_t t = 0; t < m.gradients.size(); ++t) {
      grads.push_back(campaign::gradient_json(campaign::gradient_result(m, t)));
    }
  }
  j["gradients"] = grads;
  ojson shifts = ojson::array();
  for (const campaign::OperatingPointShift& s : operating_point_shifts_of(o)) {
    shifts.push_back({{"type", s.type},
                      {"training_mean_ns", or_null<ojson>(s.training_mean_ns)},
                      {"largest_shift_ns", or_null<ojson>(s.largest_ns)},
                      {"largest_shift_link", s.largest_link},
                      {"mean_shift_ns", or_null<ojson>(s.mean_ns)},
                      {"phases", s.phases},
                      {"text", campaign::describe_shift(s)}});
  }
  j["operating_point_shift"] = shifts;
  ojson experiments = ojson::array();
  for (const campaign::ExperimentOutcome& e : o.experiments) {
    ojson x{{"name", e.name},
            {"verdict", campaign::to_string(e.verdict)},
            {"links", e.links},
            {"observed_change_ns", or_null<ojson>(e.observed_change_ns)}};
    x["predicted_change_ns"] = or_null<ojson>(e.predicted_change_ns);
    experiments.push_back(std::move(x));
  }
  j["experiments"] = experiments;
  j["warnings"] = o.warnings;
  return j;
}

void print_outcome_table(std::ostream& out, const CampaignSpec& spec, const CampaignOutcome& o) {
  bool any_truth = false;
  for (const LinkMeasurement& m : o.measurements) {
    for (const TypeGradient& g : m.gradients) any_truth = any_truth || g.truth.has_value();
  }
  const std::string ci = format_number(spec.gradient.confidence * 100, 3) + "% CI";
  std::vector<std::string> header{"link", "type", "gradient", ci, "delta-l actual", "SNR"};
  if (any_truth) header.push_back("truth");
  header.push_back("perturbation");
  header.push_back("throughput");
  header.push_back("msgs/txn");
  TextTable t(header);
  bool flagged = false;
  for (const LinkMeasurement& m : o.measurements) {
    for (const TypeGradient& g : m.gradients) {
      std::vector<std::string> row{
          m.label,
          g.type,
          number_text(g.estimate.value, 3),
          "[" + number_text(g.estimate.ci_low, 3) + ", " + number_text(g.estimate.ci_high, 3) + "]",
          common::format_latency_ns(g.actual_amplitude_ns),
          number_text(g.estimate.snr, 3)};
      if (any_truth) row.push_back(g.truth ? format_number(*g.truth, 3) : "-");
      row.push_back(common::format_latency_ns(g.perturbation_ns));
      row.push_back(number_text(g.throughput_change * 100, 3) + "%");
      row.push_back(campaign::messages_cell(g.estimate.value, g.estimate.ci_low, g.estimate.ci_high,
                                            g.messages));
      flagged = flagged || row.back().ends_with(" !");
      t.add_row(std::move(row));
    }
  }
  if (!o.measurements.empty()) {
    t.print(out);
    if (flagged) out << campaign::kWaitsNotHopsLegend << '\n';
    const auto shifts = operating_point_shifts_of(o);
    if (!shifts.empty()) {
      out << "operating-point shift (mean response in a phase minus the training's, largest per "
             "type):\n";
      for (const campaign::OperatingPointShift& s : shifts) {
        out << "  " << campaign::describe_shift(s) << '\n';
      }
    }
    out << '\n';
  }
  for (const campaign::ExperimentOutcome& e : o.experiments) {
    out << "experiment " << e.name << ": " << campaign::to_string(e.verdict)
        << ", mean response time " << (e.observed_change_ns >= 0 ? "+" : "")
        << common::format_latency_ns(e.observed_change_ns);
    if (e.predicted_change_ns)
      out << " (gradients predict " << common::format_latency_ns(*e.predicted_change_ns) << ")";
    out << '\n';
  }
  if (!o.experiments.empty()) out << "per window and term: nabla runs show " << o.run_id << '\n';
  for (const std::string& w : o.warnings) out << "warning: " << w << '\n';
  out << "run " << o.run_id << (o.complete ? " complete" : " failed") << '\n';
}

int run_campaign_command(const RunOptions& opt, std::ostream& out, std::ostream& err) {
  CampaignSpec spec = campaign::load_campaign_spec(opt.campaign_path);
  if (opt.kind != "run" && opt.kind != "demo") {
    throw std::invalid_argument("--kind must be run or demo, got '" + opt.kind + "'");
  }
  // After every usage check (exit 2); a name that does not resolve exits 1.
  campaign::resolve_campaign_hosts(spec, common::system_resolver(), err);
  const std::string db_path = opt.db_path ? *opt.db_path : spec.db.value_or("nabla.db");
  db::Store store = db::Store::open(db_path, common::realtime_ns());
  // Blocked here (and so in every thread the campaign starts) and taken by
  // the watcher, which sets the cancel flag the campaign polls.
  common::StopSignals signals(common::StopSignals::Mode::kWatch);
  CampaignOptions co;
  co.kind = opt.kind == "demo" ? db::RunKind::kDemo : db::RunKind::kRun;
  co.tool_version = NABLA_VERSION;
  co.cancel = &signals.flag();
  if (!opt.quiet) co.log = &err;
  if (!opt.skip_node_check) {
    co.check_nodes = [&err, quiet = opt.quiet](const CampaignSpec& checked) {
      check_campaign_nodes(checked, err, quiet);
    };
  }
  const bool tty = !opt.quiet && ::isatty(STDERR_FILENO) == 1;
  if (tty) {
    co.progress = [&err](const CampaignProgress& p) {
      err << "\r\033[K" << p.phase;
      if (p.links > 0) err << "  link " << p.link << "/" << p.links;
      if (p.bins_total > 0) err << "  bins " << p.bins << "/" << p.bins_total;
      err << "  time left ~"
          << common::format_duration_ns(p.left_ns / 1'000'000'000 * 1'000'000'000) << std::flush;
    };
  }
  const CampaignOutcome o = run_campaign(spec, store, co);
  if (tty) err << "\r\033[K" << std::flush;
  if (opt.json) {
    out << outcome_to_json(spec, o).dump(2) << '\n';
  } else {
    print_outcome_table(out, spec, o);
    const std::int64_t ids[] = {o.run_id};
    out << "report: " << report_command_line(ids, db_path) << '\n';
  }
  if (!o.complete) {
    err << "nabla: error: run " << o.run_id << " failed: " << o.error << '\n';
    return 1;
  }
  return 0;
}

void register_run_command(CLI::App& app) {
  auto o = std::make_shared<RunOptions>();
  auto* cmd = app.add_subcommand(
      "run", "run a link-gradient campaign: discover, train, measure every link, store");
  cmd->add_option("campaign", o->campaign_path, "campaign file (TOML)")->required();
  cmd->add_option("--db", o->db_path, "SQLite run history (default: the spec's db or nabla.db)");
  cmd->add_flag("--json", o->json, "print the outcome as JSON (first key run_id)");
  cmd->add_flag("--quiet", o->quiet, "no notes or progress on stderr");
  cmd->add_flag("--skip-node-check", o->skip_node_check,
                "do not check the nodes first (nabla nodes check); for experts");
  cmd->add_option("--kind", o->kind, "stored run kind (run|demo)")->group("");
  cmd->callback([o] {
    const int code = run_campaign_command(*o, std::cout, std::cerr);
    if (code != 0) throw CLI::RuntimeError(code);
  });
}

}  // namespace nabla::coordinator
