// A run's gradients beside a truth (truth_check.hh), read back through the
// typed reads.
#include "nabla/campaign/truth_check.hh"

#include <algorithm>
#include <cmath>
#include <set>
#include <tuple>

#include "nabla/common/link_label.hh"
#include "nabla/db/reads.hh"

namespace nabla::campaign {
namespace {

struct PhaseRate {
  std::int64_t n = 0;
  double rate_rps = 0;
};

// Completed requests per second over the intended send times of a phase
// kind (per link for active phases; link id 0 for training). A link whose
// active phase was repeated has several phases: their requests and spans add
// up (the gap between them is not part of any).
std::map<std::int64_t, PhaseRate> phase_rates(const std::vector<db::PhaseRow>& phases,
                                              db::PhaseKind kind) {
  std::map<std::int64_t, std::pair<std::int64_t, double>> gaps;  // link -> (gaps, span s)
  std::map<std::int64_t, PhaseRate> out;
  for (const db::PhaseRow& p : phases) {
    if (p.phase.kind != kind || p.samples == 0) continue;
    const std::int64_t link = p.phase.link_id.value_or(0);
    out[link].n += p.samples;
    if (p.samples > 1) {
      gaps[link].first += p.samples - 1;
      gaps[link].second += static_cast<double>(*p.last_send_ns - *p.first_send_ns) / 1e9;
    }
  }
  for (auto& [link, r] : out) {
    const auto& [n, span_s] = gaps[link];
    if (n > 0 && span_s > 0) r.rate_rps = static_cast<double>(n) / span_s;
  }
  return out;
}

// The change of a link's completed-request rate during its active phases
// against training, with the standard error of that counting noise.
struct ThroughputChange {
  std::optional<double> change;
  double se = 0;
};

ThroughputChange link_throughput_change(const std::map<std::int64_t, PhaseRate>& training,
                                        const std::map<std::int64_t, PhaseRate>& active,
                                        std::int64_t link_id) {
  const auto a = active.find(link_id);
  const auto tr = training.find(0);
  if (a == active.end() || tr == training.end() || a->second.rate_rps <= 0 ||
      tr->second.rate_rps <= 0) {
    return {};
  }
  return {
      a->second.rate_rps / tr->second.rate_rps - 1,
      std::sqrt(1.0 / static_cast<double>(a->second.n) + 1.0 / static_cast<double>(tr->second.n))};
}

std::optional<double> truth_of(const TruthTable& truth, const std::string& label,
                               const std::string& type) {
  const auto l = truth.find(label);
  if (l == truth.end()) return std::nullopt;
  const auto g = l->second.find(type);
  if (g == l->second.end()) return std::nullopt;
  return g->second;
}

}  // namespace

GradientCheck check_gradient(std::string link, std::string type, std::optional<double> truth,
                             std::optional<double> value, std::optional<double> ci_low,
                             std::optional<double> ci_high,
                             std::optional<double> link_throughput_change,
                             double link_throughput_se) {
  GradientCheck c;
  c.link = std::move(link);
  c.type = std::move(type);
  c.truth = truth;
  c.value = value;
  c.ci_low = ci_low;
  c.ci_high = ci_high;
  c.link_throughput_change = link_throughput_change;
  c.link_throughput_se = link_throughput_se;
  std::vector<std::string> why;
  if (!truth) {
    why.push_back("no truth for this link");
  } else if (!value) {
    why.push_back("not measured");
  } else {
    const double tol = 0.10 * std::max(std::abs(*truth), 1.0);
    if (std::abs(*value - *truth) > tol) why.push_back("off by more than 10%");
    if (!ci_low || !ci_high) {
      why.push_back("no CI");
    } else if (*truth < *ci_low || *truth > *ci_high) {
      why.push_back("CI misses the truth");
    }
    if (link_throughput_change &&
        std::abs(*link_throughput_change) - 2 * link_throughput_se >= 0.05)
      why.push_back("throughput changed by >= 5%");
  }
  for (const auto& w : why) c.why += (c.why.empty() ? "" : "; ") + w;
  c.pass = why.empty();
  return c;
}

std::vector<GradientCheck> check_run_gradients(db::Database& db, std::int64_t run_id,
                                               const TruthTable& truth) {
  const std::vector<db::PhaseRow> phases = db::run_phases(db, run_id);
  const auto training = phase_rates(phases, db::PhaseKind::kTraining);
  const auto active = phase_rates(phases, db::PhaseKind::kActive);
  // A simultaneous schedule measures every link in the same phases (no link
  // id): their rate is each link's.
  const auto together = phase_rates(phases, db::PhaseKind::kSimultaneous);
  std::vector<GradientCheck> out;
  std::set<std::pair<std::string, std::string>> seen;
  for (const db::GradientRow& row : db::run_gradients(db, run_id)) {
    const db::Link& l = row.link.link;
    const std::string label =
        common::campaign_link_label(l.proto, l.src_host, l.src_port, l.dst_host, l.dst_port);
    const bool alone = active.count(row.link.id) != 0;
    const ThroughputChange tc =
        link_throughput_change(training, alone ? active : together, alone ? row.link.id : 0);
    const db::Gradient& g = row.gradient;
    seen.insert({label, row.type});
    GradientCheck c = check_gradient(label, row.type, truth_of(truth, label, row.type), g.value,
                                     g.ci_low, g.ci_high, tc.change, tc.se);
    c.throughput_change = g.throughput_change;
    out.push_back(std::move(c));
  }
  for (const auto& [label, by_type] : truth) {
    for (const auto& [type, g] : by_type) {
      if (!seen.count({label, type}))
        out.push_back(
            check_gradient(label, type, g, std::nullopt, std::nullopt, std::nullopt, std::nullopt));
    }
  }
  std::sort(out.begin(), out.end(), [](const GradientCheck& a, const GradientCheck& b) {
    return std::tie(a.link, a.type) < std::tie(b.link, b.type);
  });
  return out;
}

}  // namespace nabla::campaign
