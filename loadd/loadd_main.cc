// nabla-loadd: a load agent (lancet's): runs its share of a round's rate
// with the open-loop engine when the coordinator asks. Thin main: flags in,
// nabla::loadd::run_daemon out. Needs no privilege, and refuses root
// without --allow-root.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdint>
#include <exception>
#include <iostream>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "nabla/common/cli_usage.hh"
#include "nabla/common/host_port.hh"
#include "nabla/common/log.hh"
#include "nabla/common/rpc.hh"
#include "nabla/common/wakeup_lateness.hh"
#include "nabla/loadd/daemon.hh"
#include "nabla/loadgen/engine.hh"

namespace {

namespace loadd = nabla::loadd;
namespace common = nabla::common;

// The command line, as typed; apply_flags turns it into DaemonOptions.
struct Flags {
  std::string listen = "127.0.0.1:7313";
  std::string advertise;
  std::string key_file;
  std::string log_level = "info";
  std::vector<std::string> allow_target;
  double max_rate = 2'000'000;
  int max_connections = 4096;
  int max_threads = 16;
  double max_round_s = 60;
  uint64_t max_samples = 20'000'000;
  int busy_poll_us = 50;
  std::string cpus;
  bool allow_root = false;
  bool check = false;
};

void add_flags(CLI::App& app, Flags& f) {
  app.footer(R"(
Control methods: load.start, load.status, load.result, load.samples,
load.stop, daemon.info (docs/protocol.md, "nabla-loadd"). A round nobody
polls for its lease is stopped. Without --key-file the key is /etc/nabla/key
or, on loopback only, a fresh one in /run/nabla (see docs/protocol.md,
"Local control").)");
  app.add_option("--listen", f.listen, "control address ADDR[:PORT] (default 127.0.0.1:7313)");
  app.add_option("--advertise", f.advertise,
                 "the control address ADDR[:PORT] clients connect to when it is not the listen "
                 "address (NAT, a port forward): sessions are bound to it, so only clients that "
                 "connect through it authenticate (default port: the listen port)");
  app.add_option("--key-file", f.key_file, "HMAC key file (one hex key per line, mode 0600)");
  app.add_option("--log-level", f.log_level, "error|warn|info|debug (default info)");
  app.add_option("--allow-target", f.allow_target,
                 "load only addresses in this block, ADDR[/PREFIX] (repeatable; default: any)");
  app.add_option("--max-rate", f.max_rate, "refuse rounds above this rate, rps (default 2000000)")
      ->check(CLI::Range(1.0, 1e9));
  app.add_option("--max-connections", f.max_connections,
                 "refuse rounds with more connections (default 4096)")
      ->check(CLI::Range(1, 1'000'000));
  app.add_option("--max-threads", f.max_threads,
                 "refuse rounds with more load threads (default 16)")
      ->check(CLI::Range(1, 1024));
  app.add_option("--max-round-s", f.max_round_s,
                 "refuse rounds longer than this many seconds (default 60)")
      ->check(CLI::Range(0.001, 86400.0));
  app.add_option("--max-samples", f.max_samples,
                 "refuse recording rounds expecting more samples, rate x duration "
                 "(default 20000000, about 2 GB)")
      ->check(CLI::Range(uint64_t{1}, uint64_t{1'000'000'000'000}));
  app.add_option("--busy-poll-us", f.busy_poll_us,
                 "SO_BUSY_POLL on latency rounds' connections, us (default 50; 0 = off)")
      ->check(CLI::Range(0, 1'000'000));
  app.add_option("--cpus", f.cpus, "run the load threads on these CPUs, e.g. 0,2-3");
  app.add_flag("--allow-root", f.allow_root, "run even as root (it needs no privilege)");
  app.add_flag("--check", f.check, "check the flags and this host's timer, then exit");
}

// The options from the flags; a bad value is one line naming the flag and
// exit code 2.
std::optional<int> apply_flags(const Flags& f, loadd::DaemonOptions& o) {
  const auto usage = [](const std::string& flag, const std::string& why) {
    std::cerr << "nabla-loadd: " << flag << ": " << why << "\n";
    return 2;
  };
  try {
    common::set_log_level(common::parse_log_level(f.log_level));
  } catch (const std::exception& e) {
    return usage("--log-level", e.what());
  }
  try {
    common::parse_listen_address(f.listen, common::kLoaddPort);
  } catch (const std::exception& e) {
    return usage("--listen", e.what());
  }
  o.listen = f.listen;
  if (!f.advertise.empty()) {
    try {
      common::parse_advertised_address(
          f.advertise, common::parse_listen_address(f.listen, common::kLoaddPort).port);
    } catch (const std::exception& e) {
      std::cerr << "nabla-loadd: " << e.what() << "\n";  // it names the flag
      return 2;
    }
    o.advertise = f.advertise;
  }
  if (!f.key_file.empty()) o.key_file = f.key_file;
  for (const auto& text : f.allow_target) {
    try {
      o.service.limits.allow_target.push_back(loadd::Cidr::parse(text));
    } catch (const std::exception& e) {
      return usage("--allow-target", e.what());
    }
  }
  o.service.limits.max_rate = f.max_rate;
  o.service.limits.max_connections = f.max_connections;
  o.service.limits.max_threads = f.max_threads;
  o.service.limits.max_round_ns = static_cast<int64_t>(f.max_round_s * 1e9);
  o.service.limits.max_samples = f.max_samples;
  o.service.busy_poll_us = f.busy_poll_us;
  if (!f.cpus.empty()) {
    try {
      o.service.cpus = loadd::parse_cpu_list(f.cpus);
      nabla::loadgen::validate_cpus(o.service.cpus);
    } catch (const std::exception& e) {
      return usage("--cpus", e.what());
    }
  }
  return std::nullopt;
}

// --check: the limits in force and this host's timer wake-up lateness (what
// the engine's send timers will see).
int run_check(const loadd::DaemonOptions& o) {
  std::cout << "ok: listen " << o.listen << ", max rate " << o.service.limits.max_rate
            << " rps, max connections " << o.service.limits.max_connections << ", max threads "
            << o.service.limits.max_threads << ", max round "
            << static_cast<double>(o.service.limits.max_round_ns) / 1e9 << " s, max samples "
            << o.service.limits.max_samples << "\n";
  std::cout << "ok: busy polling on latency rounds "
            << (o.service.busy_poll_us > 0 ? std::to_string(o.service.busy_poll_us) + " us"
                                           : std::string("off"))
            << "\n";
  std::cout << "ok: targets "
            << (o.service.limits.allow_target.empty() ? std::string("any") : std::string(""));
  for (std::size_t i = 0; i < o.service.limits.allow_target.size(); ++i) {
    std::cout << (i ? ", " : "") << o.service.limits.allow_target[i].to_string();
  }
  std::cout << "\n";
  common::WakeupLateness lateness;
  common::probe_wakeup_lateness(lateness, 200, 250'000);
  const auto s = lateness.summary();
  std::cout << "ok: timer wake-up lateness p50 " << s.p50_ns / 1000 << " us, p99 "
            << s.p99_ns / 1000 << " us, max " << s.max_ns / 1000 << " us (200 sleeps of 250 us)\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  common::set_log_program("nabla-loadd");
  Flags flags;
  CLI::App app{"nabla-loadd: a load agent running its share of nabla load's rounds"};
  add_flags(app, flags);
  if (const auto code = common::parse_command_line(app, argc, argv, "nabla-loadd")) return *code;
  loadd::DaemonOptions options;
  if (const auto usage_error = apply_flags(flags, options)) return *usage_error;
  // Root would only widen what a key holder can make it do: an agent needs
  // no privilege (its unit runs it as nabla-load).
  if (const auto refusal = loadd::root_refusal(::geteuid(), flags.allow_root)) {
    std::cerr << *refusal << "\n";
    return 2;
  }
  try {
    if (flags.check) return run_check(options);
    return loadd::run_daemon(options);
  } catch (const std::exception& e) {
    std::cerr << "nabla-loadd: " << e.what() << "\n";
    return 1;
  }
}
