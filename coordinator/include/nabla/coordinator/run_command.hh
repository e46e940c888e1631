#pragma once
// `nabla run CAMPAIGN.toml [--db PATH] [--json] [--quiet]`: runs a campaign
// (campaign.hh) and reports it.
//
// Exit codes: 0 complete, 1 runtime failure (the run is stored as failed),
// 2 bad spec or flags. SIGINT/SIGTERM stop the campaign: every injection is
// stopped, the run is stored as failed ("interrupted by signal N") and the
// exit code is 1. Output: a table of gradients (link, type, gradient, CI,
// actual delta-l, SNR, truth when the spec has it, perturbation, throughput
// change) and "run N complete", or with --json one object whose first key is
// "run_id". Notes (seed, links, time estimate) go to stderr unless --quiet;
// a progress line (phase, link i/n, bins, time left) only when stderr is a
// TTY. The hidden `--kind demo` stores the run with kind 'demo' (used by
// `nabla demo`). Before connecting to the daemons the run checks every node
// as `nabla nodes check` does (nodes_command.hh): a node that cannot serve
// the campaign fails the stored run with the first error, after the table
// on stderr; --skip-node-check leaves the check out.
#include <iosfwd>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "nabla/campaign/campaign.hh"

namespace CLI {
class App;
}

namespace nabla::coordinator {

struct RunOptions {
  std::string campaign_path;
  std::optional<std::string> db_path;  // overrides the spec's db
  bool json = false;
  bool quiet = false;
  std::string kind = "run";      // run | demo
  bool skip_node_check = false;  // --skip-node-check: no `nabla nodes check` first
};

// Builds the --json document (keys in this order: run_id, status, error,
// campaign, seed, ..., links, gradients, warnings).
nlohmann::ordered_json outcome_to_json(const campaign::CampaignSpec& spec,
                                       const campaign::CampaignOutcome& outcome);
void print_outcome_table(std::ostream& out, const campaign::CampaignSpec& spec,
                         const campaign::CampaignOutcome& outcome);

// Returns the exit code; spec errors throw std::invalid_argument (exit 2).
int run_campaign_command(const RunOptions& options, std::ostream& out, std::ostream& err);

void register_run_command(CLI::App& app);

}  // namespace nabla::coordinator
