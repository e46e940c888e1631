#pragma once
// nabla-injectd as a library: flag values in, run until SIGINT/SIGTERM.
// main.cc only parses flags and calls these.
#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "nabla/common/capabilities.hh"
#include "nabla/common/rpc.hh"
#include "nabla/injector/engine.hh"

namespace nabla::injector {

struct DaemonOptions {
  std::string listen = "127.0.0.1:7311";  // ADDR:PORT, [IPv6]:PORT
  // The address clients connect to when it is not `listen` (NAT, a port
  // forward): ADDR[:PORT], common::parse_advertised_address.
  std::optional<std::string> advertise;
  std::optional<std::string> key_file;
  uint16_t queue_num = 0;
  uint32_t queue_maxlen = 65536;
  int64_t max_held_bytes = EngineOptions::kDefaultMaxHeldBytes;  // EngineOptions
  std::optional<int64_t> spin_ns;  // nullopt: self-calibrated lead (EngineOptions)
  int64_t busy_poll_ns = 0;        // keep polling this long after traffic (EngineOptions)
  int realtime_priority = 0;       // SCHED_FIFO priority of the packet loop, 0 = off
  // PM QoS CPU latency limit (µs) held while injections run; nullopt = off,
  // the default (ServiceOptions::cpu_latency_us).
  std::optional<int32_t> cpu_latency_us;
  // The protocol version daemon.info reports: the build's, unless a test
  // makes the daemon claim another (--report-protocol-version, hidden).
  int64_t report_protocol_version = common::kProtocolVersion;
  // The network namespace to inject in (NAME, /path or pid:N); nullopt: the
  // one it was started in. The control socket stays where it was started.
  std::optional<std::string> netns;
  // Give up every capability but kept_capabilities() once the control
  // socket is bound and the namespace entered (nabla-injectd always does;
  // off for in-process use).
  bool drop_capabilities = false;
};

// The capabilities the daemon needs with these options: CAP_NET_ADMIN for
// NFQUEUE and iptables, CAP_SYS_NICE when a SCHED_FIFO priority is asked for.
std::vector<common::RequiredCapability> required_capabilities(const DaemonOptions& options);

// The capabilities that only some requests need; without them the daemon
// starts and refuses those requests, naming the capability: CAP_NET_RAW
// for the duplicate fault (inject.start refuses duplicate without it). The
// unit grants them; --check lists the missing ones as notes.
std::vector<common::RequiredCapability> optional_capabilities();

// The capabilities a running daemon keeps: the required and the optional
// ones, which is the unit's CapabilityBoundingSet (plus CAP_SYS_NICE with
// --rt-priority). Everything else is dropped right after start-up.
std::vector<common::RequiredCapability> kept_capabilities(const DaemonOptions& options);

// What --check found missing, in plain words (empty: all good).
std::vector<std::string> check_environment(uint16_t queue_num);

// Runs the daemon; returns the process exit code. Blocks SIGINT/SIGTERM
// (common::StopSignals, the mask restored on return) and waits for one; on
// it, stops every injection and removes every rule. With
// `netns`, the control socket is opened first, then the daemon moves into
// the namespace: its chains, queues and raw sockets all live there, and the
// threads started afterwards (packet loop, control, leases) inherit it.
int run_daemon(const DaemonOptions& options);

// --cleanup (the unit's ExecStopPost): removes the NABLA-OUT, NABLA-IN and
// NABLA-FWD chains a nabla-injectd that did not stop cleanly (kill -9, an
// abort) left in its namespace (`netns`, else this one), and nothing else:
// no other program's chains, not sniffd's. It takes the daemon's instance
// lock first, so while another nabla-injectd runs there it removes nothing
// and says so. Prints one line to `out` and returns 0; throws when the
// lock cannot be taken for another reason (main then exits 1).
int run_cleanup(const DaemonOptions& options, std::ostream& out);

}  // namespace nabla::injector
