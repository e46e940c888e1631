// nabla-injectd: NFQUEUE delay and fault injection, controlled over JSON-RPC.
// Thin main: flags in, nabla::injector::run_daemon out.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <exception>
#include <iostream>
#include <optional>
#include <stdexcept>
#include <string>

#include "nabla/common/capabilities.hh"
#include "nabla/common/cli_usage.hh"
#include "nabla/common/cpu_latency.hh"
#include "nabla/common/host_port.hh"
#include "nabla/common/log.hh"
#include "nabla/common/netns.hh"
#include "nabla/common/wakeup_lateness.hh"
#include "nabla/injector/daemon.hh"

namespace {

// "auto" -> nullopt (self-calibrated), else whole microseconds 0..10000 in ns.
std::optional<int64_t> parse_spin_us(const std::string& text) {
  if (text == "auto") return std::nullopt;
  size_t used = 0;
  long long us = -1;
  try {
    us = std::stoll(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || text.empty() || us < 0 || us > 10000) {
    throw std::invalid_argument("'" + text + "' is not auto or a whole number of us in 0..10000");
  }
  return us * 1000;
}

// --check: this host's timer wake-up lateness, and the lead it implies.
void print_timer_check(const std::optional<int64_t>& spin_ns) {
  constexpr int kSleeps = 200;
  constexpr int64_t kPeriodNs = 250'000;
  nabla::common::WakeupLateness lateness;
  nabla::common::probe_wakeup_lateness(lateness, kSleeps, kPeriodNs);
  const auto s = lateness.summary();
  std::cout << "ok: timer wake-up lateness p50 " << s.p50_ns / 1000 << " us, p90 "
            << s.p90_ns / 1000 << " us, p99 " << s.p99_ns / 1000 << " us, max " << s.max_ns / 1000
            << " us (" << kSleeps << " sleeps of " << kPeriodNs / 1000 << " us)\n";
  if (spin_ns) {
    std::cout << "ok: fixed release lead " << *spin_ns / 1000 << " us (--spin-us)\n";
  } else {
    std::cout << "ok: self-calibrated release lead " << s.lead_ns / 1000 << " us now (the p"
              << lateness.options().lead_quantile * 100
              << " of the loop's own wake-ups, kept current while it runs; daemon.info shows it)\n";
  }
}

// The command line, as typed; apply_flags turns it into DaemonOptions.
struct Flags {
  nabla::injector::DaemonOptions options;
  std::string key_file;
  std::string advertise;
  std::string log_level = "info";
  std::string spin_us = "auto";
  int64_t busy_poll_us = 0;
  std::string cpu_latency = "off";
  std::string netns;
  bool check = false;
  bool cleanup = false;
};

void add_flags(CLI::App& app, Flags& f) {
  app.add_option("--listen", f.options.listen, "control address ADDR[:PORT]")
      ->default_val("127.0.0.1:7311");
  app.add_option("--advertise", f.advertise,
                 "the control address ADDR[:PORT] clients connect to when it is not the listen "
                 "address (NAT, a port forward): sessions are bound to it, so only clients that "
                 "connect through it authenticate (default port: the listen port)");
  app.add_option("--key-file", f.key_file,
                 "HMAC key file (one hex key per line, mode 0600); default /etc/nabla/key, "
                 "or on loopback a fresh key in /run/nabla");
  app.add_option("--queue-num", f.options.queue_num, "first NFQUEUE number (one per injection)")
      ->default_val(0);
  app.add_option("--queue-maxlen", f.options.queue_maxlen, "kernel queue length per injection")
      ->default_val(65536)
      ->check(CLI::Range(16, 1 << 24));
  app.add_option("--max-held-bytes", f.options.max_held_bytes,
                 "bytes of packets all injections hold at once (IP length + 1 KiB each); a "
                 "packet past it passes at once and counts in queue_full")
      ->default_val(nabla::injector::EngineOptions::kDefaultMaxHeldBytes)
      ->check(CLI::Range(int64_t{4096}, int64_t{1} << 40));
  app.add_option("--spin-us", f.spin_us,
                 "arm each release timer this early and spin to the deadline: auto = a high "
                 "quantile of the loop's own measured wake-up lateness, or N us (0-10000) fixed")
      ->default_val("auto");
  app.add_option("--busy-poll-us", f.busy_poll_us,
                 "keep polling N us after each packet before sleeping (throughput at high "
                 "rates; costs CPU while traffic flows)")
      ->default_val(0)
      ->check(CLI::Range(0, 10000));
  app.add_option("--rt-priority", f.options.realtime_priority,
                 "SCHED_FIFO priority of the packet loop (1-99; 0 = normal scheduling)")
      ->default_val(0)
      ->check(CLI::Range(0, 99));
  app.add_option("--cpu-latency-us", f.cpu_latency,
                 "while an injection is active, hold this PM QoS CPU latency limit "
                 "(/dev/cpu_dma_latency; 0 = idle CPUs poll instead of halting) for more precise "
                 "releases; default off: polling idle costs power, shows as busy CPU and slows "
                 "SMT siblings")
      ->default_val("off");
  app.add_option("--netns", f.netns,
                 "inject in this network namespace: NAME (under /run/netns), /path or pid:N; "
                 "the control address stays in the namespace it was started in");
  app.add_option("--log-level", f.log_level, "error|warn|info|debug")->default_val("info");
  app.add_flag("--check", f.check, "verify kernel and tools, print what is missing");
  app.add_flag("--cleanup", f.cleanup,
               "remove the chains a nabla-injectd that died (kill -9) left in this namespace "
               "(or --netns), then exit; nothing while another nabla-injectd runs there (the "
               "unit's ExecStopPost)")
      ->excludes("--check");
  // Test-only: claim another protocol version in daemon.info, so the
  // version check of `nabla nodes check` can be tested against a real daemon.
  app.add_option("--report-protocol-version", f.options.report_protocol_version)->group("");
}

// Fills f.options from the text flags; a bad value is one line naming the
// flag and exit code 2.
std::optional<int> apply_flags(Flags& f) {
  nabla::common::set_log_program("nabla-injectd");
  nabla::common::set_log_level(nabla::common::parse_log_level(f.log_level));
  if (!f.key_file.empty()) f.options.key_file = f.key_file;
  if (!f.advertise.empty()) {
    try {
      nabla::common::parse_advertised_address(
          f.advertise,
          nabla::common::parse_listen_address(f.options.listen, nabla::common::kInjectdPort).port);
    } catch (const std::invalid_argument& e) {
      std::cerr << "nabla-injectd: " << e.what() << "\n";
      return 2;
    }
    f.options.advertise = f.advertise;
  }
  try {
    f.options.spin_ns = parse_spin_us(f.spin_us);
  } catch (const std::invalid_argument& e) {
    std::cerr << "nabla-injectd: --spin-us: " << e.what() << "\n";
    return 2;
  }
  f.options.busy_poll_ns = f.busy_poll_us * 1000;
  if (!f.netns.empty()) {
    try {
      const std::string path = nabla::common::netns_path(f.netns);
      if (::access(path.c_str(), F_OK) != 0)
        throw std::invalid_argument("'" + path + "' does not exist");
    } catch (const std::invalid_argument& e) {
      std::cerr << "nabla-injectd: --netns: " << e.what() << "\n";
      return 2;
    }
    f.options.netns = f.netns;
  }
  try {
    f.options.cpu_latency_us = nabla::common::parse_cpu_latency_limit(f.cpu_latency);
  } catch (const std::invalid_argument& e) {
    std::cerr << "nabla-injectd: --cpu-latency-us: " << e.what() << "\n";
    return 2;
  }
  return std::nullopt;
}

// --check: what is missing on this host, the timer, the CPU latency limit.
int run_check(const nabla::injector::DaemonOptions& options) {
  auto missing = nabla::injector::check_environment(options.queue_num);
  const auto capabilities = nabla::common::missing_capabilities(
      nabla::injector::required_capabilities(options), nabla::common::effective_capabilities());
  for (const auto& cap : capabilities) {
    missing.push_back("capability " + nabla::common::describe_capability(cap));
  }
  for (const auto& m : missing) std::cout << "missing: " << m << "\n";
  if (missing.empty()) std::cout << "ok: root, iptables, ip6tables, NFQUEUE usable\n";
  for (const auto& cap : nabla::common::missing_capabilities(
           nabla::injector::optional_capabilities(), nabla::common::effective_capabilities())) {
    std::cout << "note: no capability " << nabla::common::describe_capability(cap)
              << "; injections that need it are refused\n";
  }
  print_timer_check(options.spin_ns);
  // Advisory only: injections run without it, less precisely.
  if (!options.cpu_latency_us) {
    std::cout << "note: no CPU latency limit requested (--cpu-latency-us 0 holds one while "
                 "injecting: more precise releases, idle CPUs poll)\n";
  } else if (const nabla::common::CpuLatencyRequest probe(*options.cpu_latency_us); probe.held()) {
    std::cout << "ok: CPU latency limit of " << *options.cpu_latency_us
              << " us can be held while injecting (" << nabla::common::kCpuLatencyDevice << ")\n";
  } else {
    std::cout << "note: CPU latency limit cannot be held (" << probe.error()
              << "); injections still run, but releases may wait for idle CPUs to wake\n";
  }
  return missing.empty() ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  Flags flags;
  CLI::App app{"nabla-injectd: delay and fault injection on links (NFQUEUE)"};
  add_flags(app, flags);
  if (const auto code = nabla::common::parse_command_line(app, argc, argv, "nabla-injectd"))
    return *code;
  try {
    if (const auto usage_error = apply_flags(flags)) return *usage_error;
    if (flags.check) return run_check(flags.options);
    if (flags.cleanup) return nabla::injector::run_cleanup(flags.options, std::cout);
    if (const auto missing = nabla::common::check_capabilities(
            "nabla-injectd", nabla::injector::required_capabilities(flags.options))) {
      std::cerr << *missing << "\n";
      return 1;
    }
    flags.options.drop_capabilities = true;
    return nabla::injector::run_daemon(flags.options);
  } catch (const std::exception& e) {
    std::cerr << "nabla-injectd: " << e.what() << "\n";
    return 1;
  }
}
