#pragma once
// Synthetic rounds for the tests of the load-agent seam (rounds.hh): what an
// engine would return for an open-loop Poisson schedule answered with
// controlled latencies, without sockets or real time.
#include <cstdint>
#include <random>
#include <vector>

#include "nabla/loadgen/engine.hh"

namespace nabla::loadgen::testing {

struct SyntheticRound {
  double rate_per_s = 1000;
  int64_t start_ns = 0;  // on the sender's own clock
  int64_t duration_ns = 1'000'000'000;
  uint64_t seed = 1;
  int64_t base_latency_ns = 100'000;  // plus an exponential part of this mean:
  double jitter_mean_ns = 20'000;
  uint32_t types = 1;  // transaction types, drawn uniformly
  bool record_samples = true;
};

// Poisson sends at `rate_per_s` over [start, start + duration), each
// answered after base + Exp(jitter) ns, on time (no lateness), no errors.
inline EngineResult synthetic_round(const SyntheticRound& s) {
  EngineResult r;
  std::mt19937_64 rng(s.seed);
  std::exponential_distribution<double> gap(s.rate_per_s / 1e9);
  std::exponential_distribution<double> jitter(1.0 / s.jitter_mean_ns);
  std::uniform_int_distribution<uint32_t> type(0, s.types - 1);
  r.by_type.resize(s.types);
  for (uint32_t t = 0; t < s.types; ++t) r.type_names.push_back("t" + std::to_string(t));
  long double t = static_cast<long double>(s.start_ns);
  const int64_t end = s.start_ns + s.duration_ns;
  while (static_cast<int64_t>(t) < end) {
    Sample smp;
    smp.intended_ns = static_cast<int64_t>(t);
    smp.latency_ns = s.base_latency_ns + static_cast<int64_t>(jitter(rng));
    smp.type = type(rng);
    smp.service_time_ns = s.base_latency_ns / 2;
    if (r.scheduled == 0) r.first_intended_ns = smp.intended_ns;
    r.last_intended_ns = smp.intended_ns;
    ++r.scheduled;
    ++r.sent;
    ++r.completed;
    ++r.by_type[smp.type].completed;
    r.latency.record(smp.latency_ns);
    r.lateness.record(0);
    r.timer_lateness.record(0);
    r.slot_wait.record(0);
    if (s.record_samples) r.samples.push_back(smp);
    t += static_cast<long double>(gap(rng));
  }
  r.timer.wakeups = r.sent;
  r.thread_cpus = {0};
  return r;
}

}  // namespace nabla::loadgen::testing
