#pragma once
// `nabla nodes check CAMPAIGN.toml [--json] [--key-file FILE]`: asks every
// daemon of every node of a campaign whether it can serve it (the policy is
// nodes_check.hh) and prints one row per node, then every finding. Exit 0
// when every node can serve the campaign, 1 when one cannot, 2 on usage
// errors. `nabla run` runs the same check first (check_campaign_nodes).
//
// Per daemon: a TCP connection (reachable), the handshake with the node's
// key (authenticated), daemon.info (versions, features, lateness), then
// kClockRounds clock.now exchanges for the clock offset and round trip.
#include <chrono>
#include <iosfwd>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "nabla/campaign/spec.hh"
#include "nabla/coordinator/nodes_check.hh"

namespace CLI {
class App;
}

namespace nabla::coordinator {

inline constexpr int kClockRounds = 8;

// Every node of the campaign, probed in file order. Never throws for a
// daemon's failure: it becomes that daemon's facts.
std::vector<NodeProbe> probe_campaign_nodes(const campaign::CampaignSpec& spec,
                                            std::chrono::milliseconds timeout);

struct NodesReport {
  CampaignNeeds needs;
  CliVersions cli;
  std::vector<NodeProbe> probes;
  std::vector<NodeVerdict> verdicts;  // one per probe
  bool can_serve() const;
};
NodesReport judge_nodes(const campaign::CampaignSpec& spec, std::vector<NodeProbe> probes);

// One row per node (reachable, authenticated, versions, features, lateness,
// clock), then every finding on its own line, then the verdict line.
void print_nodes_report(std::ostream& out, const NodesReport& report);
nlohmann::ordered_json nodes_report_json(const NodesReport& report);

// The check `nabla run` runs first: probes and judges, prints the report to
// `err` when a node cannot serve the campaign (and the warnings otherwise,
// unless quiet), and throws std::runtime_error with the first error (and
// how many more) so the stored run fails with it.
void check_campaign_nodes(const campaign::CampaignSpec& spec, std::ostream& err, bool quiet);

struct NodesCheckOptions {
  std::string campaign_path;
  std::optional<std::string> key_file;  // the campaign's key_file for this check
  bool json = false;
};
// Returns the exit code; spec errors throw std::invalid_argument (exit 2).
int nodes_check_command(const NodesCheckOptions& options, std::ostream& out, std::ostream& err);

void register_nodes_command(CLI::App& app);

}  // namespace nabla::coordinator
