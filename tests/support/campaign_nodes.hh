#pragma once
// What a `nabla run` on a Testbed needs on every host: a keyed nabla-sniffd
// (:7312, 100 ms scans) and nabla-injectd (:7311), both reachable from the
// client's namespace, and the campaign file's key_file line and [[node]]
// tables naming them. Header-only like the rest of tests/support; the test
// target defines NABLA_SNIFFD_PATH and NABLA_INJECTD_PATH.
#include <signal.h>

#include <chrono>
#include <sstream>
#include <string>
#include <vector>

#include "nabla/common/netns.hh"
#include "nabla/common/rpc_auth.hh"
#include "nabla/common/text_file.hh"
#include "nabla/testbed/testbed.hh"
#include "tier_probe.hh"

namespace nabla::testing {

// Writes a new key to `key_path` and starts both daemons on every host with
// it; `injectd_flags` are added to each nabla-injectd's command line.
inline void start_keyed_daemons(testbed::Testbed& tb, const std::string& client,
                                const std::string& key_path,
                                const std::vector<std::string>& injectd_flags = {}) {
  common::generate_key_file(key_path);
  for (const auto& h : tb.hosts()) {
    tb.start(h->name, {NABLA_SNIFFD_PATH, "--listen", h->address + ":7312", "--key-file", key_path,
                       "--interval", "100ms"});
    std::vector<std::string> injectd{NABLA_INJECTD_PATH, "--listen", h->address + ":7311",
                                     "--key-file", key_path};
    injectd.insert(injectd.end(), injectd_flags.begin(), injectd_flags.end());
    tb.start(h->name, injectd);
  }
  for (const auto& h : tb.hosts()) {
    connect_in(tb.host(client).ns, h->address, 7312);
    connect_in(tb.host(client).ns, h->address, 7311);
  }
}

// `name`, `seed`, `key_file` and one [[node]] per host with its daemons.
inline std::string campaign_nodes_toml(const testbed::Testbed& tb, const std::string& name,
                                       int seed, const std::string& key_path) {
  std::ostringstream toml;
  toml << "name = \"" << name << "\"\nseed = " << seed << "\nkey_file = \"" << key_path << "\"\n";
  for (const auto& h : tb.hosts()) {
    toml << "[[node]]\nname = \"" << h->name << "\"\naddress = \"" << h->address
         << "\"\ninjectd = \"" << h->address << ":7311\"\nsniffd = \"" << h->address << ":7312\"\n";
  }
  return toml.str();
}

// What `nabla run CAMPAIGN --db DB --json` printed, run in `ns`. Notes
// (stderr) and JSON (stdout) share `out_path`: the JSON starts at its first
// key, run_id (npos when it is not there).
struct CampaignOutput {
  int exit_code = -1;  // -1: killed at the timeout
  std::string text;
  std::size_t json_at = std::string::npos;
};

inline CampaignOutput run_campaign_in(const common::NetNamespace& ns, const std::string& nabla,
                                      const std::string& campaign, const std::string& db_path,
                                      const std::string& out_path, std::chrono::seconds timeout) {
  CampaignOutput out;
  {
    common::ChildProcess run({nabla, "run", campaign, "--db", db_path, "--json"}, &ns, out_path);
    out.exit_code = run.wait(timeout);
    if (out.exit_code == -1) run.signal(SIGKILL);
  }
  out.text = common::read_text_file(out_path);
  out.json_at = out.text.find("{\n  \"run_id\"");
  return out;
}

}  // namespace nabla::testing
