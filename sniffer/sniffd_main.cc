// nabla-sniffd: per-node link discovery daemon (sock_diag + conntrack).
// Thin main: flags in, nabla::sniffer::run_daemon out.
#include <CLI/CLI.hpp>
#include <cstdint>
#include <exception>
#include <iostream>
#include <optional>
#include <stdexcept>
#include <string>

#include "nabla/common/capabilities.hh"
#include "nabla/common/cli_usage.hh"
#include "nabla/common/host_port.hh"
#include "nabla/common/log.hh"
#include "nabla/common/rpc.hh"
#include "nabla/common/rpc_auth.hh"
#include "nabla/common/units.hh"
#include "nabla/sniffer/daemon.hh"

namespace {

namespace sniffer = nabla::sniffer;
namespace common = nabla::common;

// The command line, as typed; sniffer_options and daemon_options turn it
// into DaemonOptions.
struct Flags {
  bool print = false;
  bool json = false;
  bool include_control = false;
  bool no_conntrack = false;
  bool no_conntrack_rule = false;
  bool no_destroy = false;
  bool check = false;
  bool cleanup = false;
  std::string interval = "1s";
  uint64_t count = 0;
  uint64_t min_messages = 1;
  uint64_t max_flows = sniffer::kDefaultMaxFlows;
  uint64_t max_namespaces = 256;
  std::string listen = "127.0.0.1:7312";
  std::string advertise;
  std::string key_file;
  int64_t report_protocol_version = common::kProtocolVersion;
  std::string netns = "auto";
  bool user_netns = false;
};

void add_flags(CLI::App& app, Flags& f) {
  app.footer(R"(
Flows are 5-tuples labelled with the local process; ports in the local
ephemeral range (net.ipv4.ip_local_port_range) are folded to 0. Control
methods: flows.list {since, min_messages, include_control}, daemon.info,
clock.now.
Without --key-file the key is /etc/nabla/key or, on loopback only, a fresh
one in /run/nabla (see docs/protocol.md, "Local control").)");
  app.add_flag("--print", f.print, "print flows after each scan instead of serving");
  app.add_flag("--json", f.json, "with --print: one JSON line per scan");
  app.add_flag("--include-control", f.include_control,
               "with --print: show nabla's own connections");
  app.add_flag("--no-conntrack", f.no_conntrack, "do not subscribe to conntrack events");
  app.add_flag("--no-conntrack-rule", f.no_conntrack_rule,
               "do not add the nabla-sniffd-<pid> chain that keeps conntrack tracking");
  app.add_flag("--no-destroy-events", f.no_destroy,
               "do not subscribe to sock_diag socket-destroy notifications");
  app.add_flag("--check", f.check,
               "print which flow sources work here, then exit (1 if one is inert)");
  app.add_flag("--cleanup", f.cleanup,
               "remove the conntrack chains a nabla-sniffd that died (kill -9) left in this "
               "namespace, then exit; nothing while another nabla-sniffd runs here (the unit's "
               "ExecStopPost)")
      ->excludes("--check");
  app.add_option("--interval", f.interval, "scan interval, e.g. 500ms, 1s (default 1s)");
  app.add_option("--count", f.count, "stop after this many scans (default 0: run until a signal)");
  app.add_option("--min-messages", f.min_messages, "report flows with at least this many messages");
  app.add_option("--max-flows", f.max_flows,
                 "flows kept per network namespace; new ones beyond are counted, not recorded "
                 "(default 65536)")
      ->check(CLI::Range(uint64_t{1}, uint64_t{100'000'000}));
  app.add_option("--listen", f.listen, "control address ADDR[:PORT] (default 127.0.0.1:7312)");
  app.add_option("--advertise", f.advertise,
                 "the control address ADDR[:PORT] clients connect to when it is not the listen "
                 "address (NAT, a port forward): sessions are bound to it, so only clients that "
                 "connect through it authenticate (default port: the listen port)");
  app.add_option("--key-file", f.key_file, "HMAC key file (one hex key per line, mode 0600)");
  // Test-only: claim another protocol version in daemon.info, so the
  // version check of `nabla nodes check` can be tested against a real daemon.
  app.add_option("--report-protocol-version", f.report_protocol_version)->group("");
  app.add_option("--max-namespaces", f.max_namespaces,
                 "network namespaces scanned besides its own, at most (default 256)")
      ->check(CLI::Range(uint64_t{0}, uint64_t{100'000}));
  app.add_option("--netns", f.netns,
                 "network namespaces to scan besides its own: all (every named one and every "
                 "process's), self, or NAME,... under /run/netns (default auto: all when started "
                 "in the host's root namespace, else self)");
  app.add_flag("--user-netns", f.user_netns,
               "with all: scan also the namespaces owned by a user namespace other than the "
               "host's (rootless containers); left out by default");
}

// --netns. auto: a node's sniffer runs in the host's root namespace and sees
// every other; one started inside a namespace (a testbed host) sees only its
// own. Throws invalid_argument for a bad list.
sniffer::NamespaceSelection namespace_selection(const std::string& netns) {
  if (netns != "auto") return sniffer::parse_namespace_selection(netns);
  return sniffer::in_root_namespace() ? sniffer::NamespaceSelection{true, {}}
                                      : sniffer::NamespaceSelection{};
}

// What to scan and how often; throws invalid_argument for a bad --interval.
sniffer::SnifferOptions sniffer_options(const Flags& f,
                                        const sniffer::NamespaceSelection& namespaces) {
  sniffer::SnifferOptions o;
  o.interval_ns = common::parse_duration_ns(f.interval);
  if (o.interval_ns < 10'000'000 || o.interval_ns > 3'600'000'000'000) {
    throw std::invalid_argument("--interval: must be in [10ms, 1h]");
  }
  o.min_messages = f.min_messages;
  o.max_flows = f.max_flows;
  o.max_namespaces = f.max_namespaces;
  o.conntrack = !f.no_conntrack;
  o.conntrack_rule = !f.no_conntrack_rule;
  o.destroy_events = !f.no_destroy;
  o.namespaces = namespaces;
  return o;
}

// --check: the missing capabilities and which flow sources work here; 1 if
// a capability is missing or a source is inert.
int run_check(const sniffer::SnifferOptions& options) {
  const auto missing = common::missing_capabilities(sniffer::required_capabilities(options),
                                                    common::effective_capabilities());
  for (const auto& cap : missing) {
    std::cout << "missing: capability " << common::describe_capability(cap) << "\n";
  }
  const sniffer::Sniffer probe(options);
  const auto sources = probe.sources();
  for (const auto& line : sniffer::format_sources(sources)) std::cout << line << '\n';
  for (const auto& line : probe.namespace_sources()) std::cout << line << '\n';
  for (const auto& s : sources) {
    if (!s.active) return 1;
  }
  return missing.empty() ? 0 : 1;
}

// The daemon's options: the scan, the control address and print mode.
// Throws invalid_argument for a bad --listen or --advertise.
sniffer::DaemonOptions daemon_options(const Flags& f, sniffer::SnifferOptions scan) {
  sniffer::DaemonOptions o;
  o.sniffer = std::move(scan);
  const auto address = common::parse_listen_address(f.listen, common::kSniffdPort);
  o.rpc.listen_address = address.host;
  o.rpc.port = address.port;
  if (!f.advertise.empty()) {
    o.rpc.advertise = common::parse_advertised_address(f.advertise, address.port);
  }
  if (!f.key_file.empty()) o.key_file = f.key_file;
  o.print = f.print;
  o.print_json = f.json;
  o.include_control = f.include_control;
  o.max_scans = f.count;
  o.report_protocol_version = f.report_protocol_version;
  o.drop_capabilities = true;
  return o;
}

// A bad --advertise is a usage error (exit 2), found before anything starts.
std::optional<int> check_advertise(const Flags& f) {
  if (f.advertise.empty()) return std::nullopt;
  try {
    const auto address = common::parse_listen_address(f.listen, common::kSniffdPort);
    common::parse_advertised_address(f.advertise, address.port);
  } catch (const std::invalid_argument& e) {
    std::cerr << "nabla-sniffd: " << e.what() << "\n";
    return 2;
  }
  return std::nullopt;
}

}  // namespace

int main(int argc, char** argv) {
  common::set_log_program("nabla-sniffd");
  Flags flags;
  CLI::App app{"nabla-sniffd: reports this node's TCP/UDP flows with processes at both ends"};
  add_flags(app, flags);
  if (const auto code = common::parse_command_line(app, argc, argv, "nabla-sniffd")) return *code;
  if (flags.cleanup) {
    try {
      return sniffer::run_cleanup(sniffer::DaemonOptions{}.run_dir, std::cout);
    } catch (const std::exception& e) {
      std::cerr << "nabla-sniffd: --cleanup: " << e.what() << "\n";
      return 1;
    }
  }
  sniffer::NamespaceSelection namespaces;
  try {
    namespaces = namespace_selection(flags.netns);
    namespaces.user_owned = flags.user_netns;
  } catch (const std::invalid_argument& e) {
    std::cerr << "nabla-sniffd: " << e.what() << "\n";
    return 2;
  }
  if (const auto usage_error = check_advertise(flags)) return *usage_error;
  try {
    sniffer::SnifferOptions scan = sniffer_options(flags, namespaces);
    if (flags.check) return run_check(scan);
    if (const auto missing =
            common::check_capabilities("nabla-sniffd", sniffer::required_capabilities(scan))) {
      std::cerr << *missing << "\n";
      return 1;
    }
    return sniffer::run_daemon(daemon_options(flags, std::move(scan)), std::cout);
  } catch (const std::exception& e) {
    std::cerr << "nabla-sniffd: " << e.what() << "\n";
    return 1;
  }
}
