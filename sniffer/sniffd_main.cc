// nabla-sniffd: per-node link discovery daemon (sock_diag + conntrack).
// Parses flags and runs the daemon loop from the library.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <iostream>

#include "nabla/common/capabilities.hh"
#include "nabla/common/cli_usage.hh"
#include "nabla/common/host_port.hh"
#include "nabla/common/log.hh"
#include "nabla/common/rpc.hh"
#include "nabla/common/rpc_auth.hh"
#include "nabla/common/units.hh"
#include "nabla/sniffer/daemon.hh"

int main(int argc, char** argv) {
  nabla::common::set_log_program("nabla-sniffd");
  CLI::App app{"nabla-sniffd: reports this node's TCP/UDP flows with processes at both ends"};
  app.footer(R"(
Flows are 5-tuples labelled with the local process; ports in the local
ephemeral range (net.ipv4.ip_local_port_range) are folded to 0. Control
methods: flows.list {since, min_messages, include_control}, daemon.info,
clock.now.
Without --key-file the key is /etc/nabla/key or, on loopback only, a fresh
one in /run/nabla (see docs/protocol.md, "Local control").)");
  bool print = false;
  bool json = false;
  bool include_control = false;
  bool no_conntrack = false;
  bool no_conntrack_rule = false;
  bool no_destroy = false;
  bool check = false;
  std::string interval = "1s";
  uint64_t count = 0;
  uint64_t min_messages = 1;
  uint64_t max_flows = nabla::sniffer::kDefaultMaxFlows;
  uint64_t max_namespaces = 256;
  std::string listen = "127.0.0.1:7312";
  std::string key_file;
  int64_t report_protocol_version = nabla::common::kProtocolVersion;
  std::string netns = "auto";
  app.add_flag("--print", print, "print flows after each scan instead of serving");
  app.add_flag("--json", json, "with --print: one JSON line per scan");
  app.add_flag("--include-control", include_control, "with --print: show nabla's own connections");
  app.add_flag("--no-conntrack", no_conntrack, "do not subscribe to conntrack events");
  app.add_flag("--no-conntrack-rule", no_conntrack_rule,
               "do not add the nabla-sniffd-<pid> chain that keeps conntrack tracking");
  app.add_flag("--no-destroy-events", no_destroy,
               "do not subscribe to sock_diag socket-destroy notifications");
  app.add_flag("--check", check,
               "print which flow sources work here, then exit (1 if one is inert)");
  app.add_option("--interval", interval, "scan interval, e.g. 500ms, 1s (default 1s)");
  app.add_option("--count", count, "stop after this many scans (default 0: run until a signal)");
  app.add_option("--min-messages", min_messages, "report flows with at least this many messages");
  app.add_option("--max-flows", max_flows,
                 "flows kept per network namespace; new ones beyond are counted, not recorded "
                 "(default 65536)")
      ->check(CLI::Range(uint64_t{1}, uint64_t{100'000'000}));
  app.add_option("--listen", listen, "control address ADDR[:PORT] (default 127.0.0.1:7312)");
  app.add_option("--key-file", key_file, "HMAC key file (one hex key per line, mode 0600)");
  // Test-only: claim another protocol version in daemon.info, so the
  // version check of `nabla nodes check` can be tested against a real daemon.
  app.add_option("--report-protocol-version", report_protocol_version)->group("");
  app.add_option("--max-namespaces", max_namespaces,
                 "network namespaces scanned besides its own, at most (default 256)")
      ->check(CLI::Range(uint64_t{0}, uint64_t{100'000}));
  app.add_option("--netns", netns,
                 "network namespaces to scan besides its own: all (every named one and every "
                 "process's), self, or NAME,... under /run/netns (default auto: all when started "
                 "in the host's root namespace, else self)");
  if (const auto code = nabla::common::parse_command_line(app, argc, argv, "nabla-sniffd"))
    return *code;

  // auto: a node's sniffer runs in the host's root namespace and sees every
  // other; one started inside a namespace (a testbed host) sees only its own.
  nabla::sniffer::NamespaceSelection namespaces;
  try {
    namespaces = netns != "auto" ? nabla::sniffer::parse_namespace_selection(netns)
                 : nabla::sniffer::in_root_namespace()
                     ? nabla::sniffer::NamespaceSelection{true, {}}
                     : nabla::sniffer::NamespaceSelection{};
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "nabla-sniffd: %s\n", e.what());
    return 2;
  }
  try {
    nabla::sniffer::DaemonOptions opts;
    opts.sniffer.interval_ns = nabla::common::parse_duration_ns(interval);
    if (opts.sniffer.interval_ns < 10'000'000 || opts.sniffer.interval_ns > 3'600'000'000'000) {
      throw std::invalid_argument("--interval: must be in [10ms, 1h]");
    }
    opts.sniffer.min_messages = min_messages;
    opts.sniffer.max_flows = max_flows;
    opts.sniffer.max_namespaces = max_namespaces;
    opts.sniffer.conntrack = !no_conntrack;
    opts.sniffer.conntrack_rule = !no_conntrack_rule;
    opts.sniffer.destroy_events = !no_destroy;
    opts.sniffer.namespaces = namespaces;
    const auto capabilities = nabla::sniffer::required_capabilities(opts.sniffer);
    if (check) {
      const auto missing = nabla::common::missing_capabilities(
          capabilities, nabla::common::effective_capabilities());
      for (const auto& cap : missing) {
        std::cout << "missing: capability " << nabla::common::describe_capability(cap) << "\n";
      }
      const nabla::sniffer::Sniffer sniffer(opts.sniffer);
      const auto sources = sniffer.sources();
      for (const auto& line : nabla::sniffer::format_sources(sources)) std::cout << line << '\n';
      for (const auto& line : sniffer.namespace_sources()) std::cout << line << '\n';
      for (const auto& s : sources) {
        if (!s.active) return 1;
      }
      return missing.empty() ? 0 : 1;
    }
    if (const auto missing = nabla::common::check_capabilities("nabla-sniffd", capabilities)) {
      std::fprintf(stderr, "%s\n", missing->c_str());
      return 1;
    }
    const auto address = nabla::common::parse_listen_address(listen, nabla::common::kSniffdPort);
    opts.rpc.listen_address = address.host;
    opts.rpc.port = address.port;
    if (!key_file.empty()) opts.key_file = key_file;
    opts.print = print;
    opts.print_json = json;
    opts.include_control = include_control;
    opts.max_scans = count;
    opts.report_protocol_version = report_protocol_version;
    opts.drop_capabilities = true;
    return nabla::sniffer::run_daemon(opts, std::cout);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "nabla-sniffd: %s\n", e.what());
    return 1;
  }
}
