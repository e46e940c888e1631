// Fault benchmark: per fault of nabla-injectd, what the receiver saw against
// what was asked, as a ratio (1.00 = exact), over several runs on the
// two-host testbed (testbed/injector_testbed.hh). The peer is tc netem on
// the sender's veth end: where the kernel has sch_netem, the same probes run
// against the same fault set as a netem qdisc; where it has not, the netem
// command line that would be compared is printed instead.
// Usage: fault_bench [--runs N]   (root)
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "nabla/testbed/injector_testbed.hh"

namespace {

using nabla::testbed::InjectorTestbed;
using nabla::testbed::ProbeResult;
using nlohmann::json;

constexpr const char* kLink = "udp 10.77.0.1 -> 10.77.0.2:9000";

// The probes a row sends and how it turns them into observed / asked.
struct Probes {
  int count = 5000;
  double rate_pps = 5000.0;
  size_t size = 64;
};

struct FaultCase {
  std::string name;
  json settings;                   // inject.start's delay and faults
  std::vector<std::string> netem;  // the same fault as netem's arguments
  Probes probes;
  std::function<double(const std::vector<ProbeResult>&)> ratio;
};

double fraction_lost(const std::vector<ProbeResult>& probes) {
  return static_cast<double>(nabla::testbed::lost(probes)) / static_cast<double>(probes.size());
}

double mean_burst(const std::vector<ProbeResult>& probes) {
  size_t bursts = 0;
  size_t lost = 0;
  bool in_burst = false;
  for (const auto& p : probes) {
    const bool gone = p.copies == 0;
    if (gone) ++lost;
    if (gone && !in_burst) ++bursts;
    in_burst = gone;
  }
  return bursts == 0 ? 0.0 : static_cast<double>(lost) / static_cast<double>(bursts);
}

double fraction_early(const std::vector<ProbeResult>& probes, int64_t below_ns) {
  size_t early = 0;
  for (const auto& p : probes) early += p.delay_ns >= 0 && p.delay_ns < below_ns ? 1 : 0;
  return static_cast<double>(early) / static_cast<double>(probes.size());
}

double received_rate_bps(const std::vector<ProbeResult>& probes, double wire_bytes) {
  int64_t first = INT64_MAX;
  int64_t last = 0;
  size_t received = 0;
  for (const auto& p : probes) {
    if (p.delay_ns < 0) continue;
    ++received;
    first = std::min(first, p.send_ns + p.delay_ns);
    last = std::max(last, p.send_ns + p.delay_ns);
  }
  if (received < 2 || last <= first) return 0.0;
  return (static_cast<double>(received) - 1.0) * wire_bytes * 8.0 /
         (static_cast<double>(last - first) / 1e9);
}

double delay_sd_ns(const std::vector<ProbeResult>& probes) {
  double n = 0.0, mean = 0.0, m2 = 0.0;
  for (const auto& p : probes) {
    if (p.delay_ns < 0) continue;
    n += 1.0;
    const double d = static_cast<double>(p.delay_ns) - mean;
    mean += d / n;
    m2 += d * (static_cast<double>(p.delay_ns) - mean);
  }
  return n > 1.0 ? std::sqrt(m2 / (n - 1.0)) : 0.0;
}

std::vector<FaultCase> fault_cases() {
  std::vector<FaultCase> cases;
  cases.push_back(
      {"loss 5%", {{"faults", {{"loss", {{"p", 0.05}}}}}}, {"loss", "5%"}, {}, [](const auto& p) {
         return fraction_lost(p) / 0.05;
       }});
  const json ge = {{"model", "gilbert_elliott"}, {"p", 0.05}, {"r", 0.25}};
  cases.push_back({"loss gemodel 5%,25%: loss rate (asked 1/6)",
                   {{"faults", {{"loss", ge}}}},
                   {"loss", "gemodel", "5%", "25%", "100%", "0%"},
                   {},
                   [](const auto& p) { return fraction_lost(p) / (0.05 / 0.30); }});
  cases.push_back({"loss gemodel 5%,25%: mean burst (asked 4)",
                   {{"faults", {{"loss", ge}}}},
                   {"loss", "gemodel", "5%", "25%", "100%", "0%"},
                   {},
                   [](const auto& p) { return mean_burst(p) / 4.0; }});
  cases.push_back({"duplicate 5%",
                   {{"faults", {{"duplicate", {{"probability", 0.05}}}}}},
                   {"duplicate", "5%"},
                   {},
                   [](const auto& probes) {
                     double twice = 0;
                     for (const auto& p : probes) twice += p.copies == 2 ? 1 : 0;
                     return twice / static_cast<double>(probes.size()) / 0.05;
                   }});
  cases.push_back({"corrupt 5% (receiver drops)",
                   {{"faults", {{"corrupt", {{"probability", 0.05}, {"fix_checksum", false}}}}}},
                   {"corrupt", "5%"},
                   {},
                   [](const auto& p) { return fraction_lost(p) / 0.05; }});
  cases.push_back({"reorder 25%, delay 5ms",
                   {{"delay", "5ms"}, {"faults", {{"reorder", {{"probability", 0.25}}}}}},
                   {"delay", "5ms", "reorder", "25%"},
                   {3000, 2000.0, 64},
                   [](const auto& p) { return fraction_early(p, 2'500'000) / 0.25; }});
  cases.push_back({"rate 4mbit (1028-byte packets, offered 4.9mbit)",
                   {{"faults", {{"rate_limit", {{"rate_bps", 4e6}}}}}},
                   {"rate", "4mbit"},
                   {1200, 600.0, 1000},
                   [](const auto& p) { return received_rate_bps(p, 1028) / 4e6; }});
  cases.push_back({"jitter 1ms normal around 10ms: sd",
                   {{"delay", "10ms"},
                    {"faults", {{"jitter", {{"amount", "1ms"}, {"distribution", "normal"}}}}}},
                   {"delay", "10ms", "1ms", "distribution", "normal"},
                   {1000, 200.0, 64},
                   [](const auto& p) { return delay_sd_ns(p) / 1e6; }});
  return cases;
}

double nabla_ratio(InjectorTestbed& bed, const FaultCase& c, int run) {
  json params = c.settings;
  params["link"] = kLink;
  params["lease_s"] = 60;
  params["seed"] = 1000 + run;
  const auto id = bed.call("inject.start", params).at("id");
  const auto probes = nabla::testbed::run_udp_probes(bed, 9000, c.probes.count, c.probes.rate_pps,
                                                     c.probes.size, std::chrono::milliseconds(800));
  bed.call("inject.stop", {{"id", id}});
  return c.ratio(probes);
}

std::vector<std::string> netem_command(const FaultCase& c, const char* op) {
  std::vector<std::string> argv = {"tc", "qdisc", op, "dev", "nb-snd0", "root"};
  if (std::string(op) == "del") return argv;
  argv.insert(argv.end(), {"netem", "limit", "100000"});
  argv.insert(argv.end(), c.netem.begin(), c.netem.end());
  return argv;
}

std::string joined(const std::vector<std::string>& argv) {
  std::string s;
  for (const auto& a : argv) s += (s.empty() ? "" : " ") + a;
  return s;
}

// netem's ratio, or nothing when the kernel has no sch_netem.
std::optional<double> netem_ratio(InjectorTestbed& bed, const FaultCase& c) {
  if (bed.sender().run(netem_command(c, "add")).exit_code != 0) return std::nullopt;
  const auto probes = nabla::testbed::run_udp_probes(bed, 9000, c.probes.count, c.probes.rate_pps,
                                                     c.probes.size, std::chrono::milliseconds(800));
  bed.sender().run(netem_command(c, "del"));
  return c.ratio(probes);
}

std::string spread(std::vector<double> ratios) {
  std::sort(ratios.begin(), ratios.end());
  char text[96];
  std::snprintf(text, sizeof text, "%.3f (%.3f-%.3f)", ratios[ratios.size() / 2], ratios.front(),
                ratios.back());
  return text;
}

}  // namespace

int main(int argc, char** argv) {
  int runs = 3;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::string(argv[i]) == "--runs") runs = std::max(1, std::stoi(argv[i + 1]));
  }
  if (::geteuid() != 0) {
    std::fprintf(stderr, "fault_bench: needs root (namespaces, NFQUEUE)\n");
    return 1;
  }
  InjectorTestbed bed;
  bed.start_daemon();
  std::printf("receiver-observed / requested, median (min-max) of %d runs\n", runs);
  std::printf("%-50s %-26s %s\n", "fault", "nabla-injectd", "tc netem");
  std::vector<std::string> recipes;
  for (const FaultCase& c : fault_cases()) {
    std::vector<double> ratios;
    for (int run = 0; run < runs; ++run) ratios.push_back(nabla_ratio(bed, c, run));
    std::vector<double> netem;
    for (int run = 0; run < runs; ++run) {
      const auto r = netem_ratio(bed, c);
      if (!r) break;
      netem.push_back(*r);
    }
    std::printf("%-50s %-26s %s\n", c.name.c_str(), spread(ratios).c_str(),
                netem.empty() ? "n/a (no sch_netem)" : spread(netem).c_str());
    if (netem.empty()) recipes.push_back(joined(netem_command(c, "add")));
    std::fflush(stdout);
  }
  if (!recipes.empty()) {
    std::printf(
        "\nsch_netem is not in this kernel. On a machine with it the peer column is the "
        "same probes against, in the sender namespace (nb-snd0), one at a time:\n");
    for (const auto& r : recipes) std::printf("  %s\n", r.c_str());
  }
  return 0;
}
