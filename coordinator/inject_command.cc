#include "nabla/coordinator/inject_command.hh"

#include <signal.h>
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
#include "nabla/common/rpc.hh"
#include "nabla/common/units.hh"
#include "nabla/coordinator/text_table.hh"

namespace nabla::coordinator {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;

constexpr milliseconds kCallTimeout{3000};

// Blocks SIGINT/SIGTERM for the life of the object so they can be taken
// synchronously with sigtimedwait between RPCs; restores the mask after.
class BlockedSignals {
 public:
  BlockedSignals() {
    sigemptyset(&set_);
    sigaddset(&set_, SIGINT);
    sigaddset(&set_, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set_, &old_);
  }
  ~BlockedSignals() { pthread_sigmask(SIG_SETMASK, &old_, nullptr); }
  BlockedSignals(const BlockedSignals&) = delete;
  BlockedSignals& operator=(const BlockedSignals&) = delete;

  // Waits up to `wait_ns`; returns the signal number, or 0 on timeout.
  int wait(std::int64_t wait_ns) const {
    timespec ts{static_cast<time_t>(wait_ns / 1'000'000'000),
                static_cast<long>(wait_ns % 1'000'000'000)};
    const int sig = sigtimedwait(&set_, nullptr, &ts);
    return sig > 0 ? sig : 0;
  }

 private:
  sigset_t set_{};
  sigset_t old_{};
};

std::string ns_text(const json& v) {
  return v.is_number() ? common::format_duration_ns(std::llround(v.get<double>())) : "-";
}

void print_live_line(std::ostream& err, const json& s, double elapsed_s) {
  err << "\r\033[K" << format_number(elapsed_s, 3) << " s  packets " << s.value("packets", 0)
      << "  delayed " << s.value("delayed", 0) << "  dropped " << s.value("dropped", 0)
      << "  actual mean " << ns_text(s["actual_delay_ns"]["mean"]) << "  p99 "
      << ns_text(s["actual_delay_ns"]["p99"]) << std::flush;
}

void print_final(std::ostream& out, const json& r) {
  out << "injection " << r["id"].get<std::string>() << " on " << r["link"].get<std::string>()
      << " (" << r["direction"].get<std::string>() << ") ran "
      << format_number(r["duration_s"].get<double>(), 3) << " s, seed " << r["seed"]
      << (r["interrupted"].get<bool>() ? ", stopped by signal" : "") << "\n\n";
  TextTable counters({"packets", "bytes", "delayed", "dropped", "corrupted", "duplicated",
                      "queue_full", "enobufs"});
  auto n = [&](const char* k) { return std::to_string(r.value(k, std::int64_t{0})); };
  counters.add_row({n("packets"), n("bytes"), n("delayed"), n("dropped"), n("corrupted"),
                    n("duplicated"), n("queue_full"), n("enobufs")});
  counters.print(out);
  out << '\n';
  TextTable delay({"actual added delay", "count", "mean", "std", "p50", "p99", "max"});
  auto row = [&](const std::string& name, const json& d) {
    delay.add_row({name, std::to_string(d.value("count", std::int64_t{0})), ns_text(d["mean"]),
                   ns_text(d["std"]), ns_text(d["p50"]), ns_text(d["p99"]), ns_text(d["max"])});
  };
  row("overall", r["actual_delay_ns"]);
  if (r.contains("halves")) {
    row("while high", r["halves"]["high"]);
    row("while low", r["halves"]["low"]);
  }
  delay.print(out);
}

}  // namespace

json build_inject_params(const InjectOptions& o) {
  if (o.direction != "out" && o.direction != "in" && o.direction != "fwd") {
    throw std::invalid_argument("--dir must be out, in or fwd, got '" + o.direction + "'");
  }
  if (!(o.lease_s > 0.0 && o.lease_s <= 3600.0)) {
    throw std::invalid_argument("--lease must be in (0, 3600] seconds");
  }
  json p{{"link", o.link}, {"direction", o.direction}, {"lease_s", o.lease_s}};
  // Validate durations here so a typo fails before anything is started.
  auto duration = [](const char* flag, const std::string& text) {
    try {
      common::parse_duration_ns(text);
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(std::string(flag) + ": " + e.what());
    }
    return text;
  };
  if (o.square_period && !o.delay) {
    throw std::invalid_argument("--square-period needs --delay (the square wave's amplitude)");
  }
  if (o.delay) {
    if (o.square_period) {
      if (!(o.duty > 0.0 && o.duty < 1.0)) throw std::invalid_argument("--duty must be in (0, 1)");
      p["delay"] = {{"kind", "square"},
                    {"amplitude", duration("--delay", *o.delay)},
                    {"period", duration("--square-period", *o.square_period)},
                    {"duty", o.duty}};
    } else {
      p["delay"] = duration("--delay", *o.delay);
    }
  }
  json faults = json::object();
  if (o.jitter)
    faults["jitter"] = {{"amount", duration("--jitter", *o.jitter)}, {"distribution", "uniform"}};
  if (o.loss) {
    try {
      common::parse_percent(*o.loss);
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(std::string("--loss: ") + e.what());
    }
    faults["loss"] = {{"model", "bernoulli"}, {"p", *o.loss}};
  }
  if (!o.delay && faults.empty()) {
    throw std::invalid_argument("nothing to inject: give --delay, --jitter or --loss");
  }
  if (!faults.empty()) p["faults"] = faults;
  if (o.seed) p["seed"] = *o.seed;
  return p;
}

int run_inject(const InjectOptions& o, std::ostream& out, std::ostream& err) {
  const json params = build_inject_params(o);
  std::optional<common::Key> key;
  if (o.key_file) key = common::load_key_file(*o.key_file);
  const std::string where = "nabla-injectd at " + o.node.to_string();

  BlockedSignals signals;
  auto client = common::RpcClient::connect(o.node.host, o.node.port, key, kCallTimeout);
  json started;
  try {
    started = client.call("inject.start", params, kCallTimeout);
  } catch (const common::RpcError& e) {
    throw std::runtime_error(where + " refused the injection: " + e.what());
  }
  const std::string id = started.at("id").get<std::string>();
  const std::int64_t t0 = common::monotonic_ns();
  const std::int64_t lease_ns = static_cast<std::int64_t>(o.lease_s * 1e9);
  const bool live = !o.json && ::isatty(STDERR_FILENO);
  if (live) {
    err << "injecting " << id << " on " << started["link"].get<std::string>() << " (seed "
        << started["seed"] << "); Ctrl-C stops\n";
  }

  bool interrupted = false;
  json stopped;
  try {
    std::int64_t last_renew = t0;
    std::int64_t last_live = t0;
    while (true) {
      const std::int64_t now = common::monotonic_ns();
      if (o.for_ns && now - t0 >= *o.for_ns) break;
      std::int64_t wait = 250'000'000;
      if (o.for_ns) wait = std::min(wait, t0 + *o.for_ns - now);
      if (signals.wait(wait) != 0) {
        interrupted = true;
        break;
      }
      const std::int64_t after = common::monotonic_ns();
      if (after - last_renew >= lease_ns / 3) {
        client.call("lease.renew", {{"id", id}}, kCallTimeout);
        last_renew = after;
      }
      if (live && after - last_live >= 1'000'000'000) {
        print_live_line(err, client.call("inject.stats", {{"id", id}}, kCallTimeout),
                        static_cast<double>(after - t0) / 1e9);
        last_live = after;
      }
    }
    if (live) err << "\r\033[K";
    stopped = client.call("inject.stop", {{"id", id}}, kCallTimeout);
  } catch (const std::exception& e) {
    // Best effort: stop it now rather than wait for the lease.
    try {
      if (client.connected()) client.call("inject.stop", {{"id", id}}, kCallTimeout);
    } catch (...) {
    }
    throw std::runtime_error("lost " + where + " during injection " + id + " (" + e.what() +
                             "); if it is still running, the daemon stops it when its " +
                             format_number(o.lease_s) + " s lease lapses");
  }

  json result = stopped.value("stats", json::object());
  result["node"] = o.node.to_string();
  result["id"] = id;
  result["link"] = stopped.value("link", o.link);
  result["direction"] = stopped.value("direction", o.direction);
  result["seed"] = stopped.value("seed", started.value("seed", json(nullptr)));
  result["delay"] = stopped.value("delay", json(nullptr));
  result["duration_s"] = static_cast<double>(common::monotonic_ns() - t0) / 1e9;
  result["interrupted"] = interrupted;
  if (o.json) {
    out << result.dump(2) << '\n';
  } else {
    print_final(out, result);
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
  cmd->add_option("--key-file", o->key_file, "HMAC key file (hex, mode 0600)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--link", o->link, "link spec, e.g. \"udp 10.1.0.1 -> 10.1.0.2:9000\"")
      ->required();
  cmd->add_option("--dir", o->direction, "where on the node: out, in or fwd")->default_val("out");
  cmd->add_option("--delay", o->delay,
                  "added delay, e.g. 20ms (the amplitude with --square-period)");
  cmd->add_option("--square-period", o->square_period,
                  "make the delay a square wave of this period");
  cmd->add_option("--duty", o->duty, "square-wave duty cycle")->default_val(0.5);
  cmd->add_option("--jitter", o->jitter, "uniform jitter of this size, e.g. 1ms");
  cmd->add_option("--loss", o->loss, "Bernoulli loss, e.g. 5%");
  cmd->add_option("--for", *for_text, "duration, e.g. 30s (default: until Ctrl-C)");
  cmd->add_option("--lease", o->lease_s, "lease in seconds; renewed every third of it")
      ->default_val(10.0);
  cmd->add_option("--seed", o->seed, "seed for the fault generators (default: random, reported)");
  cmd->add_flag("--json", o->json, "print the final statistics as JSON");
  cmd->callback([o, node, for_text] {
    o->node = common::parse_host_port(*node, common::kInjectdPort);
    if (!for_text->empty()) {
      try {
        o->for_ns = common::parse_duration_ns(*for_text);
      } catch (const std::invalid_argument& e) {
        throw std::invalid_argument(std::string("--for: ") + e.what());
      }
    }
    const int code = run_inject(*o, std::cout, std::cerr);
    if (code != 0) throw CLI::RuntimeError(code);
  });
}

}  // namespace nabla::coordinator
