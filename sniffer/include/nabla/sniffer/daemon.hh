#pragma once
// nabla-sniffd's event loop: scans at absolute deadlines (start + k·interval,
// so a slow scan never shifts the schedule), drains conntrack events and
// destroy notifications as they arrive (and before each scan), logs which
// sources are active, serves flows.list / daemon.info, and stops on
// SIGINT/SIGTERM. All on one thread (one asio io_context), so the Sniffer needs no locks.
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "nabla/common/capabilities.hh"
#include "nabla/common/rpc.hh"
#include "nabla/sniffer/sniffer.hh"

namespace nabla::sniffer {

struct DaemonOptions {
  SnifferOptions sniffer;
  // Control server; ignored in print mode. Its key comes from key_file or
  // the defaults of common::DaemonKey.
  common::RpcServerOptions rpc;
  std::optional<std::string> key_file;
  // Print mode: a table (or JSON lines) of the flows that changed after each
  // scan, no control server.
  bool print = false;
  bool print_json = false;
  bool include_control = false;
  uint64_t max_scans = 0;  // stop after this many scans; 0: run until a signal
  // The protocol version daemon.info reports: the build's, unless a test
  // makes the daemon claim another (--report-protocol-version, hidden).
  int64_t report_protocol_version = common::kProtocolVersion;
  // Where the one-per-namespace lock lives (common/instance_lock.hh); taken
  // when running as root, the only case with kernel state to protect.
  std::string run_dir = "/run/nabla";
  // Give up every capability but kept_capabilities() once the control
  // socket is bound and the sources are open (nabla-sniffd always does;
  // off for in-process use).
  bool drop_capabilities = false;
};

// The capabilities the daemon needs with these options: CAP_SYS_PTRACE and
// CAP_DAC_READ_SEARCH to read other users' /proc/PID/fd (a socket's owner),
// CAP_NET_ADMIN for conntrack events and the chain that keeps them live.
std::vector<common::RequiredCapability> required_capabilities(const SnifferOptions& options);

// The capabilities a running daemon keeps: the required ones, plus
// CAP_SYS_ADMIN when it scans other network namespaces (setns on every
// scan) -- the unit's CapabilityBoundingSet for its options. Everything else
// is dropped right after start-up.
std::vector<common::RequiredCapability> kept_capabilities(const SnifferOptions& options);

// Runs until a signal or max_scans. Setup errors throw (system_error,
// invalid_argument). `out` receives the print-mode output and the ready
// line ("nabla-sniffd: listening on ADDR:PORT"). Returns the exit status.
int run_daemon(const DaemonOptions& options, std::ostream& out);

// --cleanup (the unit's ExecStopPost): removes the nabla-sniffd-<pid>
// chains of sniffds that are no longer alive from this network namespace,
// restoring the nf_conntrack_acct a chain records (ConntrackRule::
// remove_stale), and nothing else: no live sniffd's chain, no chain of
// injectd's. It takes the daemon's instance lock (in `run_dir`) first, so
// while another nabla-sniffd runs here it removes nothing and says so. The
// chains a dead sniffd left in the namespaces it scanned besides its own go
// when the next sniffd scans them. Prints one line to `out`; returns 0.
int run_cleanup(const std::string& run_dir, std::ostream& out);

// One line per source: "source NAME: active: ..." or, for an inert one,
// "WARNING: source NAME inert: ..." (for --check and the start-up log).
std::vector<std::string> format_sources(const std::vector<SourceStatus>& sources);
// Logs format_sources() to stderr, inert sources as warnings.
void log_sources(const Sniffer& sniffer);

// Formats one flow as a table row (print mode).
std::string format_flow_row(const ReportedFlow& flow);

}  // namespace nabla::sniffer
