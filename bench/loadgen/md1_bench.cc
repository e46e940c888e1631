// The engine's open-loop sojourn against queueing theory: nabla-tier with
// one worker and a fixed 2 ms sleep, Poisson arrivals at 250/s (rho about
// 0.5), RUNS runs of 6 s. Per run: the mean sojourn (latency minus the
// run's smallest latency - service, the network and wake-up floor) against
// Pollaczek-Khinchine W = S + lambda E[S^2] / (2 (1 - rho)) with the
// measured service moments (X-Service-Time-Ns), and the deviation
// |W_measured - W| / W. Target 10%; on 2-vCPU VMs whole runs read 20-40%
// high now and then, on a quiet machine too, and the cause is not known
// (suspected: the tier's I/O thread and worker sharing the 2 cores).
//   usage: nabla_md1_bench NABLA_TIER [RUNS]
// Reproduce with:
//   build/bench/loadgen/nabla_md1_bench build/tier/nabla-tier 5
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "nabla/common/clock.hh"
#include "nabla/loadgen/engine.hh"
#include "tier_process.hh"

namespace {

using namespace nabla;

// One run's deviation from the formula; -1 when the run itself failed.
double md1_run(const std::string& tier_binary) {
  testing::TierProcess tier(tier_binary, {"--listen", "127.0.0.1:0", "--workers", "1", "--url",
                                          "/ service=fixed:2ms mode=sleep"});
  if (tier.port() == 0) return -1;
  loadgen::EngineConfig c;
  c.port = tier.port();
  c.protocol.kind = loadgen::ProtocolSpec::Kind::kHttp;
  c.connections = 16;  // enough that requests queue at the server, not here
  c.schedule.rate_per_s = 250;
  c.duration_ns = 6'000'000'000;
  c.seed = 11;
  const loadgen::EngineResult r = loadgen::run_engine(c, common::monotonic_ns() + 20'000'000);
  if (r.samples.empty()) return -1;
  double service = 0, service_sq = 0, sojourn = 0, floor = 1e18;
  for (const auto& s : r.samples) {
    const auto st = static_cast<double>(s.service_time_ns);
    service += st;
    service_sq += st * st;
    sojourn += static_cast<double>(s.latency_ns);
    floor = std::min(floor, static_cast<double>(s.latency_ns) - st);
  }
  const auto n = static_cast<double>(r.samples.size());
  service /= n;
  service_sq /= n;
  sojourn = sojourn / n - floor;
  const double rho = r.achieved_rate() * service / 1e9;
  const double lambda = r.achieved_rate() / 1e9;  // per ns
  const double predicted = service + lambda * service_sq / (2 * (1 - rho));
  const double deviation = std::abs(sojourn - predicted) / predicted;
  std::printf(
      "  %llu requests, %llu errors; service %.0f ns, rho %.3f, sojourn %.0f ns, predicted %.0f "
      "ns: deviation %.3f\n",
      static_cast<unsigned long long>(r.completed),
      static_cast<unsigned long long>(r.errors.total()), service, rho, sojourn, predicted,
      deviation);
  return deviation;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: nabla_md1_bench NABLA_TIER [RUNS]\n");
    return 2;
  }
  const int runs = argc > 2 ? std::max(1, std::atoi(argv[2])) : 5;
  std::printf("M/D/1 (one worker, 2 ms, 250/s, 6 s per run), %d runs\n", runs);
  int within = 0;
  int failed = 0;
  for (int i = 0; i < runs; ++i) {
    const double d = md1_run(argv[1]);
    failed += d < 0 ? 1 : 0;
    within += d >= 0 && d <= 0.10 ? 1 : 0;
  }
  std::printf("within 10%%: %d of %d runs%s\n", within, runs,
              failed ? (" (" + std::to_string(failed) + " could not run)").c_str() : "");
  return failed == runs ? 1 : 0;
}
