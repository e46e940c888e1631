// The policy of `nabla nodes check`; see nodes_check.hh.
#include "nabla/coordinator/nodes_check.hh"

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <stdexcept>

#include "nabla/campaign/math.hh"
#include "nabla/common/units.hh"

namespace nabla::coordinator {
namespace {

using common::protocol::FeatureState;

class Findings {
 public:
  Findings(NodeVerdict& verdict) : verdict_(verdict) {}
  void add(Severity severity, const std::string& text) {
    verdict_.findings.push_back({severity, "node " + verdict_.node + ": " + text});
  }

 private:
  NodeVerdict& verdict_;
};

// Reachable, authenticated, the same versions. Returns whether the rest of
// what the daemon reported can be judged.
bool judge_connection(const DaemonFacts& d, const CliVersions& cli, Findings& out) {
  const std::string who = d.daemon + " at " + d.address;
  if (!d.reachable) {
    out.add(Severity::kError, "cannot reach " + who + ": " + d.error);
    return false;
  }
  if (!d.authenticated) {
    out.add(Severity::kError, who + " refused authentication: " + d.error);
    return false;
  }
  bool trusted = true;
  if (d.protocol_version != cli.protocol_version) {
    out.add(Severity::kError, who + " speaks protocol version " +
                                  std::to_string(d.protocol_version) + ", this nabla speaks " +
                                  std::to_string(cli.protocol_version));
    trusted = false;
  }
  if (d.version != cli.version) {
    out.add(Severity::kError,
            who + " is version " + d.version + ", this nabla is version " + cli.version);
  }
  if (trusted && !d.node) {
    out.add(Severity::kError, who + " cannot be read: " + d.error);
    trusted = false;
  }
  return trusted;
}

FeatureState feature(const DaemonFacts& d, const std::string& name) {
  const auto it = d.node->features.find(name);
  if (it == d.node->features.end()) return {false, "not reported"};
  return it->second;
}

void judge_injectd(const DaemonFacts& d, Findings& out) {
  const FeatureState nfqueue = feature(d, "nfqueue");
  if (!nfqueue.available) {
    out.add(Severity::kError, "injections need NFQUEUE, unusable: " + nfqueue.detail);
  }
}

void judge_sniffd(const DaemonFacts& d, const CampaignNeeds& needs, Findings& out) {
  if (!needs.discovery) return;
  const FeatureState sock_diag = feature(d, "sock_diag");
  if (!sock_diag.available) {
    out.add(Severity::kError, "discovery needs sock_diag, unusable: " + sock_diag.detail);
  }
  const FeatureState conntrack = feature(d, "conntrack");
  const FeatureState destroy = feature(d, "destroy");
  if (!conntrack.available && !destroy.available) {
    out.add(Severity::kError,
            "discovery needs conntrack events or socket-destroy notifications, neither works "
            "(conntrack: " +
                conntrack.detail + "; destroy: " + destroy.detail + ")");
  }
}

// The interface that holds one of the node's addresses.
const common::protocol::InterfaceStamps* service_interface(const NodeProbe& probe,
                                                           const common::protocol::NodeFacts& f) {
  for (const auto& i : f.hw_timestamps) {
    for (const std::string& a : i.addresses) {
      if (std::find(probe.addresses.begin(), probe.addresses.end(), a) != probe.addresses.end()) {
        return &i;
      }
    }
  }
  return nullptr;
}

// What every daemon reports of its node, judged once per node from the
// first trusted daemon (injectd first: its lateness and clock matter most).
void judge_node_facts(const NodeProbe& probe, const DaemonFacts& d, const CampaignNeeds& needs,
                      Findings& out) {
  const FeatureState cpu = feature(d, "cpu_latency");
  if (!cpu.available) {
    out.add(Severity::kWarning, "no CPU latency limit can be held (" + cpu.detail +
                                    "): releases and the tail wait for idle CPUs to wake");
  }
  if (const auto* i = service_interface(probe, *d.node)) {
    out.add(Severity::kNote, std::string("hardware timestamps on ") + i->name + ": " +
                                 (i->hardware ? "yes, " : "no, ") + i->detail);
  } else {
    out.add(Severity::kNote, "hardware timestamps: no interface holds the node's address");
  }
  if (d.clock) {
    const std::int64_t bound_ns = std::llabs(d.clock->offset_ns) + d.clock->rtt_ns / 2;
    if (bound_ns > needs.clock_tolerance_ns) {
      out.add(Severity::kWarning, "clock offset " + common::format_duration_ns(d.clock->offset_ns) +
                                      " ± " + common::format_duration_ns(d.clock->rtt_ns / 2) +
                                      " exceeds a tenth of the " + "expected bin width (" +
                                      common::format_duration_ns(needs.clock_tolerance_ns) +
                                      "): synchronise the clocks (chrony, PTP)");
    }
  }
}

}  // namespace

ClockEstimate estimate_clock_offset(std::span<const ClockSample> samples) {
  if (samples.empty()) throw std::invalid_argument("no clock samples");
  const ClockSample* best = nullptr;
  for (const ClockSample& s : samples) {
    if (s.received_ns < s.sent_ns) throw std::invalid_argument("clock sample received before sent");
    if (best == nullptr || s.received_ns - s.sent_ns < best->received_ns - best->sent_ns) best = &s;
  }
  // t1 = t2 = daemon_ns: offset = ((t1 - t0) + (t2 - t3)) / 2.
  const std::int64_t there = best->daemon_ns - best->sent_ns;
  const std::int64_t back = best->daemon_ns - best->received_ns;
  return ClockEstimate{(there + back) / 2, best->received_ns - best->sent_ns};
}

CampaignNeeds campaign_needs(const campaign::CampaignSpec& spec) {
  CampaignNeeds needs;
  needs.discovery = spec.links.discover;
  double total = 0;
  double least = std::numeric_limits<double>::infinity();
  for (const auto& [url, weight] : spec.workload.mix) {
    total += weight;
    least = std::min(least, weight);
  }
  needs.expected_bin_ns = campaign::expected_bin_width_ns(spec.workload.rate_rps, least / total,
                                                          spec.gradient.requests_per_bin);
  needs.clock_tolerance_ns = needs.expected_bin_ns / 10;
  return needs;
}

const char* to_string(Severity severity) {
  switch (severity) {
    case Severity::kError:
      return "error";
    case Severity::kWarning:
      return "warning";
    case Severity::kNote:
      break;
  }
  return "note";
}

bool NodeVerdict::can_serve() const {
  return std::none_of(findings.begin(), findings.end(),
                      [](const Finding& f) { return f.severity == Severity::kError; });
}

NodeVerdict judge_node(const NodeProbe& probe, const CampaignNeeds& needs, const CliVersions& cli) {
  NodeVerdict verdict{probe.name, {}};
  Findings out(verdict);
  const DaemonFacts* facts_from = nullptr;
  if (probe.injectd && judge_connection(*probe.injectd, cli, out)) {
    judge_injectd(*probe.injectd, out);
    facts_from = &*probe.injectd;
  }
  if (probe.sniffd && judge_connection(*probe.sniffd, cli, out)) {
    judge_sniffd(*probe.sniffd, needs, out);
    if (facts_from == nullptr) facts_from = &*probe.sniffd;
  }
  if (facts_from != nullptr) judge_node_facts(probe, *facts_from, needs, out);
  return verdict;
}

}  // namespace nabla::coordinator
