// `nabla nodes check`; see nodes_command.hh.
#include "nabla/coordinator/nodes_command.hh"

#include <CLI/CLI.hpp>
#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>
#include <cmath>
#include <iostream>
#include <memory>
#include <set>
#include <stdexcept>

#include "nabla/campaign/hosts.hh"
#include "nabla/common/clock.hh"
#include "nabla/common/local_keys.hh"
#include "nabla/common/protocol/injectd.hh"
#include "nabla/common/protocol/sniffd.hh"
#include "nabla/common/resolve.hh"
#include "nabla/common/rpc.hh"
#include "nabla/common/units.hh"
#include "nabla/common/version.hh"
#include "nabla/coordinator/text_table.hh"

namespace nabla::coordinator {
namespace {

namespace protocol = common::protocol;
using nlohmann::json;
using std::chrono::milliseconds;

constexpr milliseconds kProbeTimeout{2000};
constexpr const char* kInjectd = "nabla-injectd";

// "" when a TCP connection to `at` opens within `timeout`, else why not.
std::string tcp_connect_error(const common::HostPort& at, milliseconds timeout) {
  std::error_code ec;
  const asio::ip::address address = asio::ip::make_address(at.host, ec);
  if (ec) return "'" + at.host + "' is not an address";
  asio::io_context io;
  asio::ip::tcp::socket socket(io);
  std::optional<std::error_code> result;
  socket.async_connect({address, at.port}, [&](const std::error_code& e) { result = e; });
  io.run_for(timeout);
  if (!result) return "no answer within " + std::to_string(timeout.count()) + "ms";
  return *result ? result->message() : "";
}

// The node's key, or why it cannot be read.
struct NodeKey {
  std::optional<common::Key> key;
  std::string error;
};

// The key for the node's daemon at `at` from the campaign's key file or key
// directory (that daemon's HOST.key), if it names one.
NodeKey node_key(const campaign::CampaignSpec& spec, const campaign::CampaignNode& node,
                 const common::HostPort& at) {
  const auto path = spec.key_file_for(node);
  if (!path) return {};
  try {
    return {common::load_node_key(*path, at.host), ""};
  } catch (const std::exception& e) {
    return {std::nullopt, "key file " + *path + ": " + e.what()};
  }
}

// daemon.info: the versions always; the rest only from a daemon of this
// protocol version, whose answer this build can read.
void read_info(common::RpcClient& client, DaemonFacts& d, milliseconds timeout) {
  const json info = client.call(protocol::DaemonInfoParams{}, timeout);
  if (info.contains("version") && info["version"].is_string()) d.version = info["version"];
  if (info.contains("protocol_version") && info["protocol_version"].is_number_integer()) {
    d.protocol_version = info["protocol_version"].get<std::int64_t>();
  }
  if (d.protocol_version != common::kProtocolVersion) return;
  try {
    if (d.daemon == kInjectd) {
      const auto i = protocol::InjectorInfo::from_json(info);
      d.node = i.node;
      d.lateness_p50_us = i.timer.wakeup_lateness.p50_us;
      d.lateness_p99_us = i.timer.wakeup_lateness.p99_us;
    } else {
      d.node = protocol::SnifferInfo::from_json(info).node;
    }
  } catch (const std::invalid_argument& e) {
    throw std::runtime_error(std::string("daemon.info: ") + e.what());
  }
}

ClockEstimate measure_clock(common::RpcClient& client, milliseconds timeout) {
  std::vector<ClockSample> samples;
  try {
    for (int i = 0; i < kClockRounds; ++i) {
      const std::int64_t sent_ns = common::realtime_ns();
      const protocol::ClockNowResult answer = client.call(protocol::ClockNowParams{}, timeout);
      const std::int64_t received_ns = common::realtime_ns();
      samples.push_back({sent_ns, answer.realtime_ns, received_ns});
    }
    return estimate_clock_offset(samples);
  } catch (const std::exception& e) {
    throw std::runtime_error(std::string("clock.now: ") + e.what());
  }
}

DaemonFacts probe_daemon(const char* daemon, const common::HostPort& at, const NodeKey& key,
                         milliseconds timeout) {
  DaemonFacts d;
  d.daemon = daemon;
  d.address = at.to_string();
  d.error = tcp_connect_error(at, timeout);
  if (!d.error.empty()) return d;
  d.reachable = true;
  d.error = key.error;
  if (!d.error.empty()) return d;
  std::optional<common::RpcClient> client;
  try {
    // Without the campaign's key file, the client defaults (local_keys.hh),
    // as `nabla run` connects.
    const char* key_name =
        std::string_view(daemon) == kInjectd ? common::kInjectdKeyName : common::kSniffdKeyName;
    const common::RpcClient::KeySource source =
        key.key ? common::RpcClient::KeySource([k = *key.key] { return k; })
                : common::client_key_source(std::nullopt, key_name, at.host, at.port);
    client.emplace(common::RpcClient::connect(at.host, at.port, source, timeout, key_name));
  } catch (const std::exception& e) {
    d.error = e.what();
    return d;
  }
  d.authenticated = true;
  try {
    read_info(*client, d, timeout);
    if (d.node) d.clock = measure_clock(*client, timeout);
  } catch (const std::exception& e) {
    d.error = e.what();
    d.node.reset();
  }
  return d;
}

// ------------------------------------------------------------- the report

std::vector<const DaemonFacts*> daemons_of(const NodeProbe& p) {
  std::vector<const DaemonFacts*> out;
  if (p.injectd) out.push_back(&*p.injectd);
  if (p.sniffd) out.push_back(&*p.sniffd);
  return out;
}

// One cell over a node's daemons: the value when they agree, else each
// daemon's ("injectd yes, sniffd no"); "-" for a node without daemons.
template <class Value>
std::string cell(const NodeProbe& p, Value value) {
  std::vector<std::pair<std::string, std::string>> values;
  for (const DaemonFacts* d : daemons_of(p)) {
    values.emplace_back(d->daemon.substr(std::string("nabla-").size()), value(*d));
  }
  if (values.empty()) return "-";
  bool same = true;
  for (const auto& v : values) same = same && v.second == values.front().second;
  if (same) return values.front().second;
  std::string out;
  for (const auto& [who, v] : values) out += (out.empty() ? "" : ", ") + who + " " + v;
  return out;
}

// "ok", or the features some daemon of the node reported unusable.
std::string features_cell(const NodeProbe& p) {
  std::set<std::string> missing;
  bool any = false;
  for (const DaemonFacts* d : daemons_of(p)) {
    if (!d->node) continue;
    any = true;
    for (const auto& [name, state] : d->node->features) {
      if (!state.available) missing.insert(name);
    }
  }
  if (!any) return "-";
  if (missing.empty()) return "ok";
  std::string out = "missing:";
  for (const std::string& m : missing) out += " " + m;
  return out;
}

// The clock of the daemon the verdict read it from: injectd first.
const DaemonFacts* clock_daemon(const NodeProbe& p) {
  for (const DaemonFacts* d : daemons_of(p)) {
    if (d->clock) return d;
  }
  return nullptr;
}

std::string lateness_cell(const NodeProbe& p) {
  if (!p.injectd || !p.injectd->lateness_p99_us) return "-";
  const auto text = [](double us) { return common::format_duration_ns(std::llround(us * 1e3)); };
  return text(*p.injectd->lateness_p50_us) + " / " + text(*p.injectd->lateness_p99_us);
}

std::vector<std::string> node_row(const NodeProbe& p, const NodeVerdict& v) {
  const auto yes_no = [](bool b) { return std::string(b ? "yes" : "no"); };
  const DaemonFacts* c = clock_daemon(p);
  return {
      p.name,
      cell(p, [&](const DaemonFacts& d) { return yes_no(d.reachable); }),
      cell(p, [&](const DaemonFacts& d) { return d.reachable ? yes_no(d.authenticated) : "-"; }),
      cell(p, [](const DaemonFacts& d) { return d.version.empty() ? "-" : d.version; }),
      cell(p,
           [](const DaemonFacts& d) {
             return d.protocol_version > 0 ? std::to_string(d.protocol_version) : "-";
           }),
      features_cell(p),
      lateness_cell(p),
      c ? common::format_duration_ns(c->clock->offset_ns) : "-",
      c ? common::format_duration_ns(c->clock->rtt_ns) : "-",
      v.can_serve() ? "yes" : "NO"};
}

json daemon_json(const DaemonFacts& d) {
  json j{{"daemon", d.daemon},       {"address", d.address},
         {"reachable", d.reachable}, {"authenticated", d.authenticated},
         {"version", d.version},     {"protocol_version", d.protocol_version},
         {"error", d.error}};
  if (d.node) d.node->write_to(j);
  if (d.lateness_p99_us) {
    j["wakeup_lateness_us"] = {{"p50", *d.lateness_p50_us}, {"p99", *d.lateness_p99_us}};
  }
  if (d.clock) j["clock"] = {{"offset_ns", d.clock->offset_ns}, {"rtt_ns", d.clock->rtt_ns}};
  return j;
}

std::string first_error(const NodesReport& report, std::size_t& errors) {
  std::string first;
  errors = 0;
  for (const NodeVerdict& v : report.verdicts) {
    for (const Finding& f : v.findings) {
      if (f.severity != Severity::kError) continue;
      if (errors++ == 0) first = f.text;
    }
  }
  return first;
}

}  // namespace

std::vector<NodeProbe> probe_campaign_nodes(const campaign::CampaignSpec& spec,
                                            milliseconds timeout) {
  std::vector<NodeProbe> probes;
  for (const campaign::CampaignNode& node : spec.nodes) {
    NodeProbe p{node.name, node.addresses, std::nullopt, std::nullopt};
    if (node.injectd) {
      p.injectd =
          probe_daemon(kInjectd, *node.injectd, node_key(spec, node, *node.injectd), timeout);
    }
    if (node.sniffd) {
      p.sniffd =
          probe_daemon("nabla-sniffd", *node.sniffd, node_key(spec, node, *node.sniffd), timeout);
    }
    probes.push_back(std::move(p));
  }
  return probes;
}

bool NodesReport::can_serve() const {
  for (const NodeVerdict& v : verdicts) {
    if (!v.can_serve()) return false;
  }
  return true;
}

NodesReport judge_nodes(const campaign::CampaignSpec& spec, std::vector<NodeProbe> probes) {
  NodesReport r{campaign_needs(spec),
                {common::nabla_version(), common::kProtocolVersion},
                std::move(probes),
                {}};
  for (const NodeProbe& p : r.probes) r.verdicts.push_back(judge_node(p, r.needs, r.cli));
  return r;
}

void print_nodes_report(std::ostream& out, const NodesReport& report) {
  TextTable t({"node", "reachable", "authenticated", "version", "protocol", "features",
               "lateness p50/p99", "clock offset", "rtt", "can serve"});
  for (std::size_t i = 0; i < report.probes.size(); ++i) {
    t.add_row(node_row(report.probes[i], report.verdicts[i]));
  }
  t.print(out);
  for (const NodeVerdict& v : report.verdicts) {
    for (const Finding& f : v.findings) out << to_string(f.severity) << ": " << f.text << '\n';
  }
  std::size_t serving = 0;
  for (const NodeVerdict& v : report.verdicts) serving += v.can_serve() ? 1 : 0;
  out << serving << " of " << report.verdicts.size() << " nodes can serve the campaign (nabla "
      << report.cli.version << ", protocol " << report.cli.protocol_version << ")\n";
}

nlohmann::ordered_json nodes_report_json(const NodesReport& report) {
  nlohmann::ordered_json j;
  j["can_serve"] = report.can_serve();
  j["version"] = report.cli.version;
  j["protocol_version"] = report.cli.protocol_version;
  j["expected_bin_ns"] = report.needs.expected_bin_ns;
  j["clock_tolerance_ns"] = report.needs.clock_tolerance_ns;
  j["nodes"] = nlohmann::ordered_json::array();
  for (std::size_t i = 0; i < report.probes.size(); ++i) {
    const NodeProbe& p = report.probes[i];
    json daemons = json::array();
    for (const DaemonFacts* d : daemons_of(p)) daemons.push_back(daemon_json(*d));
    json findings = json::array();
    for (const Finding& f : report.verdicts[i].findings) {
      findings.push_back({{"severity", to_string(f.severity)}, {"text", f.text}});
    }
    j["nodes"].push_back({{"node", p.name},
                          {"can_serve", report.verdicts[i].can_serve()},
                          {"addresses", p.addresses},
                          {"daemons", daemons},
                          {"findings", findings}});
  }
  return j;
}

void check_campaign_nodes(const campaign::CampaignSpec& spec, std::ostream& err, bool quiet) {
  const NodesReport report = judge_nodes(spec, probe_campaign_nodes(spec, kProbeTimeout));
  std::size_t errors = 0;
  const std::string first = first_error(report, errors);
  if (errors == 0) {
    if (quiet) return;
    for (const NodeVerdict& v : report.verdicts) {
      for (const Finding& f : v.findings) {
        if (f.severity == Severity::kWarning) err << "warning: " << f.text << '\n';
      }
    }
    return;
  }
  print_nodes_report(err, report);
  throw std::runtime_error(first + (errors > 1 ? " (and " + std::to_string(errors - 1) +
                                                     " more problems; nabla nodes check lists them)"
                                               : ""));
}

int nodes_check_command(const NodesCheckOptions& o, std::ostream& out, std::ostream& err) {
  campaign::CampaignSpec spec = campaign::load_campaign_spec(o.campaign_path);
  if (o.key_file) spec.key_file = o.key_file;
  campaign::resolve_campaign_hosts(spec, common::system_resolver(), err);
  const NodesReport report = judge_nodes(spec, probe_campaign_nodes(spec, kProbeTimeout));
  if (o.json) {
    out << nodes_report_json(report).dump(2) << '\n';
  } else {
    print_nodes_report(out, report);
  }
  return report.can_serve() ? 0 : 1;
}

void register_nodes_command(CLI::App& app) {
  auto o = std::make_shared<NodesCheckOptions>();
  auto* nodes =
      app.add_subcommand("nodes", "check that every node can serve a campaign (nodes check FILE)");
  nodes->require_subcommand(1);
  auto* check = nodes->add_subcommand(
      "check", "can every node serve the campaign: daemons, versions, kernel features, clocks");
  check->add_option("campaign", o->campaign_path, "campaign file (TOML)")->required();
  check->add_flag("--json", o->json, "print the report as JSON");
  check
      ->add_option("--key-file", o->key_file,
                   "HMAC key file, or key directory of HOST.key per node, for nodes without "
                   "their own (instead of the campaign's)")
      ->check(CLI::ExistingPath);
  check->callback([o] {
    const int code = nodes_check_command(*o, std::cout, std::cerr);
    if (code != 0) throw CLI::RuntimeError(code);
  });
}

}  // namespace nabla::coordinator
