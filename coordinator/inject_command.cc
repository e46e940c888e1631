#include "nabla/coordinator/inject_command.hh"

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <iostream>
#include <memory>
#include <ostream>

#include "nabla/common/clock.hh"
#include "nabla/common/json_rpc.hh"
#include "nabla/common/local_keys.hh"
#include "nabla/common/netns.hh"
#include "nabla/common/protocol/injectd.hh"
#include "nabla/common/resolve.hh"
#include "nabla/common/rpc.hh"
#include "nabla/common/rpc_auth.hh"
#include "nabla/common/stop_signals.hh"
#include "nabla/common/units.hh"
#include "nabla/coordinator/text_table.hh"

namespace nabla::coordinator {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
namespace protocol = common::protocol;

constexpr milliseconds kCallTimeout{3000};

std::string ns_text(double ns) {
  return common::format_duration_ns(std::llround(ns));
}

void print_live_line(std::ostream& err, const protocol::InjectStatsResult& r, double elapsed_s) {
  const protocol::InjectionStats s = r.stats.value_or(protocol::InjectionStats{});
  err << "\r\033[K" << format_number(elapsed_s, 3) << " s  packets " << s.counters.packets
      << "  delayed " << s.counters.delayed << "  dropped " << s.counters.dropped
      << "  actual mean " << ns_text(s.actual_delay.mean_ns) << "  p99 "
      << ns_text(static_cast<double>(s.actual_delay.p99_ns)) << std::flush;
}

// How one `nabla inject` ended.
struct InjectOutcome {
  std::string node;
  protocol::InjectStopResult stopped;
  double duration_s = 0.0;
  bool interrupted = false;
};

// --json: the stop's statistics (counters, actual_delay_ns, halves, seed),
// plus the injection and how the run ended.
json outcome_json(const InjectOutcome& o) {
  const protocol::InjectionDescription& d = o.stopped.injection;
  json result = o.stopped.stats ? o.stopped.stats->to_json() : json::object();
  result["node"] = o.node;
  result["id"] = d.id;
  result["link"] = d.link;
  result["direction"] = std::string(protocol::to_string(d.direction));
  result["seed"] = d.seed;
  result["delay"] = d.delay.to_result_json();
  result["duration_s"] = o.duration_s;
  result["interrupted"] = o.interrupted;
  return result;
}

void print_final(std::ostream& out, const InjectOutcome& o) {
  const protocol::InjectionDescription& d = o.stopped.injection;
  out << "injection " << d.id << " on " << d.link << " (" << protocol::to_string(d.direction)
      << ") ran " << format_number(o.duration_s, 3) << " s, seed " << d.seed
      << (o.interrupted ? ", stopped by signal" : "") << "\n\n";
  const protocol::InjectionStats s = o.stopped.stats.value_or(protocol::InjectionStats{});
  const protocol::PacketCounters& c = s.counters;
  TextTable counters({"packets", "bytes", "delayed", "dropped", "corrupted", "duplicated",
                      "reordered", "queue_full", "enobufs"});
  auto n = [](uint64_t v) { return std::to_string(v); };
  counters.add_row({n(c.packets), n(c.bytes), n(c.delayed), n(c.dropped), n(c.corrupted),
                    n(c.duplicated), n(c.reordered), n(c.queue_full), n(c.enobufs)});
  counters.print(out);
  out << '\n';
  TextTable delay({"actual added delay", "count", "mean", "std", "p50", "p99", "max"});
  auto row = [&](const std::string& name, const protocol::DelaySummary& x) {
    delay.add_row({name, n(x.count), ns_text(x.mean_ns), ns_text(x.std_ns),
                   ns_text(static_cast<double>(x.p50_ns)), ns_text(static_cast<double>(x.p99_ns)),
                   ns_text(static_cast<double>(x.max_ns))});
  };
  row("overall", s.actual_delay);
  row("while high", s.high);
  row("while low", s.low);
  delay.print(out);
}

}  // namespace

protocol::InjectStartParams build_inject_params(const InjectOptions& o,
                                                const FileReader& read_file) {
  protocol::InjectStartParams p;
  try {
    p.direction = protocol::parse_direction(o.direction);
  } catch (const std::invalid_argument&) {
    throw std::invalid_argument("--dir must be out, in or fwd, got '" + o.direction + "'");
  }
  if (!(o.lease_s > 0.0 && o.lease_s <= protocol::kMaxLeaseS)) {
    throw std::invalid_argument("--lease must be in (0, 3600] seconds");
  }
  // The daemon checks the link, so a bad one is its one error naming the field.
  p.link = o.link;
  p.settings.lease_s = o.lease_s;
  FaultRequest request = build_fault_request(o.faults, read_file);
  p.settings.delay = std::move(request.delay);
  p.settings.faults = std::move(request.faults);
  if (!p.settings.delay && p.settings.faults.empty()) {
    throw std::invalid_argument(
        "nothing to inject: give --delay, --jitter, --loss, --reorder, --corrupt, --duplicate, "
        "--rate or --partition");
  }
  p.settings.seed = o.seed;
  try {
    p.release = protocol::parse_release(o.release);
  } catch (const std::invalid_argument&) {
    throw std::invalid_argument("--release must be spin or sleep, got '" + o.release + "'");
  }
  if (o.netns) {
    try {
      common::netns_path(*o.netns);
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(std::string("--netns: ") + e.what());
    }
    p.netns = o.netns;
  }
  return p;
}

int run_inject(const InjectOptions& o, std::ostream& out, std::ostream& err) {
  const protocol::InjectStartParams params = build_inject_params(o);
  if (o.dry_run) {
    out << json{{"method", params.kMethod}, {"params", params.to_json()}}.dump(2) << '\n';
    return 0;
  }
  const auto key =
      common::client_key_source(o.key_file, common::kInjectdKeyName, o.node.host, o.node.port);
  const std::string where = "nabla-injectd at " + o.node.to_string();

  // This invocation's session token: only it may stop or renew its
  // injection without force (docs/security.md).
  const auto token_bytes = common::random_nonce();
  const std::string owner = "inject-" + common::to_hex(token_bytes.data(), 8);
  protocol::InjectStartParams owned = params;
  owned.owner = owner;

  // Taken between RPCs, so a signal ends the loop and the injection is
  // still stopped and reported.
  common::StopSignals signals(common::StopSignals::Mode::kBlock);
  auto client = common::RpcClient::connect(o.node.host, o.node.port, key, kCallTimeout,
                                           common::kInjectdKeyName);
  protocol::InjectionDescription started;
  try {
    started = client.call(owned, kCallTimeout);
  } catch (const common::RpcError& e) {
    throw std::runtime_error(where + " refused the injection: " + e.what());
  }
  const std::string id = started.id;
  const std::int64_t t0 = common::monotonic_ns();
  const std::int64_t lease_ns = static_cast<std::int64_t>(o.lease_s * 1e9);
  // At least every minute, so the connection is never idle long enough for
  // the daemon's idle timeout (10 min) to close it.
  const std::int64_t renew_every_ns = std::min<std::int64_t>(lease_ns / 3, 60'000'000'000);
  const bool live = !o.json && ::isatty(STDERR_FILENO);
  if (live) {
    err << "injecting " << id << " on " << started.link << " (seed " << started.seed
        << "); Ctrl-C stops\n";
  }

  InjectOutcome outcome{o.node.to_string(), {started, std::nullopt}, 0.0, false};
  const protocol::InjectStopParams stop{id, owner};
  try {
    std::int64_t last_renew = t0;
    std::int64_t last_live = t0;
    while (true) {
      const std::int64_t now = common::monotonic_ns();
      if (o.for_ns && now - t0 >= *o.for_ns) break;
      std::int64_t wait = 250'000'000;
      if (o.for_ns) wait = std::min(wait, t0 + *o.for_ns - now);
      if (signals.wait_for(wait) != 0) {
        outcome.interrupted = true;
        break;
      }
      const std::int64_t after = common::monotonic_ns();
      if (after - last_renew >= renew_every_ns) {
        client.call(protocol::LeaseRenewParams{id, std::nullopt, owner}, kCallTimeout);
        last_renew = after;
      }
      if (live && after - last_live >= 1'000'000'000) {
        print_live_line(err, client.call(protocol::InjectStatsParams{id, false}, kCallTimeout),
                        static_cast<double>(after - t0) / 1e9);
        last_live = after;
      }
    }
    if (live) err << "\r\033[K";
    outcome.stopped = client.call(stop, kCallTimeout);
  } catch (const std::exception& e) {
    // Best effort: stop it now rather than wait for the lease.
    try {
      if (client.connected()) client.call(stop, kCallTimeout);
    } catch (...) {
    }
    throw std::runtime_error("lost " + where + " during injection " + id + " (" + e.what() +
                             "); if it is still running, the daemon stops it when its " +
                             format_number(o.lease_s) + " s lease lapses");
  }

  outcome.duration_s = static_cast<double>(common::monotonic_ns() - t0) / 1e9;
  if (o.json) {
    out << outcome_json(outcome).dump(2) << '\n';
  } else {
    print_final(out, outcome);
  }
  return 0;
}

void register_inject_command(CLI::App& app) {
  auto o = std::make_shared<InjectOptions>();
  auto node = std::make_shared<std::string>();
  auto for_text = std::make_shared<std::string>();
  auto* cmd = app.add_subcommand("inject", "inject delay and faults into one link for a while");
  cmd->add_option("--node", *node, "nabla-injectd address HOST:PORT (port 7311 by default)")
      ->required();
  cmd->add_option("--key-file", o->key_file,
                  "key file, or key directory of HOST.key per node (default: $NABLA_KEY_FILE, "
                  "/etc/nabla/keys/HOST.key, /etc/nabla/key)")
      ->check(CLI::ExistingPath);
  cmd->add_option("--link", o->link, "link spec, e.g. \"udp 10.1.0.1 -> 10.1.0.2:9000\"")
      ->required();
  cmd->add_option("--dir", o->direction, "where on the node: out, in or fwd")->default_val("out");
  register_fault_flags(*cmd, o->faults);
  cmd->add_option("--for", *for_text, "duration, e.g. 30s (default: until Ctrl-C)");
  cmd->add_option("--lease", o->lease_s,
                  "lease in seconds; renewed every third of it (at least every minute)")
      ->default_val(10.0);
  cmd->add_option("--seed", o->seed, "seed for the fault generators (default: random, reported)");
  cmd->add_flag("--json", o->json, "print the final statistics as JSON");
  cmd->add_flag("--dry-run", o->dry_run, "print the inject.start request as JSON, send nothing");
  cmd->add_option("--netns", o->netns,
                  "the network namespace on the node to inject in: NAME (under /run/netns), "
                  "/path or pid:N; the node's nabla-injectd must run there (--netns)");
  cmd->add_option("--release", o->release,
                  "spin: release each delayed packet on time (the daemon polls before each "
                  "deadline); sleep: no polling, releases later by the wake-up lateness, which "
                  "the reported delay counts (what campaigns use)")
      ->default_val("spin");
  cmd->callback([o, node, for_text] {
    o->node = common::parse_host_port(*node, common::kInjectdPort);
    if (!for_text->empty()) {
      try {
        o->for_ns = common::parse_duration_ns(*for_text);
      } catch (const std::invalid_argument& e) {
        throw std::invalid_argument(std::string("--for: ") + e.what());
      }
    }
    if (!o->dry_run) {
      common::resolve_host_port(o->node, common::system_resolver(), "--node", std::cerr);
    }
    const int code = run_inject(*o, std::cout, std::cerr);
    if (code != 0) throw CLI::RuntimeError(code);
  });
}

}  // namespace nabla::coordinator
