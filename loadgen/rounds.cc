// The round seam for load agents; see rounds.hh.
#include "nabla/loadgen/rounds.hh"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>

namespace nabla::loadgen {

const char* to_string(AgentKind kind) {
  switch (kind) {
    case AgentKind::kSymmetric:
      return "symmetric";
    case AgentKind::kThroughput:
      return "throughput";
    case AgentKind::kLatency:
      return "latency";
  }
  return "symmetric";
}

std::optional<AgentKind> parse_agent_kind(const std::string& text) {
  for (AgentKind k : {AgentKind::kSymmetric, AgentKind::kThroughput, AgentKind::kLatency}) {
    if (text == to_string(k)) return k;
  }
  return std::nullopt;
}

void AgentSummary::add(const AgentRound& round) {
  agent = round.agent;
  kind = round.kind;
  rate_per_s = round.rate_per_s;
  ++rounds;
  if (!round.check.passed()) {
    ++rounds_failed;
    last_reasons = round.check.reasons;
  }
  sent += round.sent;
  completed += round.completed;
  late += round.late;
  errors.add(round.errors);
  samples += round.samples;
  timer_lateness.merge(round.timer_lateness);
}

RoundRunner local_round_runner(std::function<int64_t()> clock) {
  return [clock = std::move(clock)](const RoundRequest& request) {
    RoundOutcome out;
    out.start_ns = clock() + request.lead_ns;
    EngineConfig e = request.engine;
    e.duration_ns = request.duration_ns;
    out.merged = run_engine(e, out.start_ns);
    return out;
  };
}

std::vector<double> split_rate(double total_rate, const std::vector<AgentKind>& kinds,
                               double latency_share) {
  if (kinds.empty()) throw std::invalid_argument("split_rate: no agent");
  if (!(latency_share > 0 && latency_share < 1)) {
    throw std::invalid_argument("split_rate: the latency agents' share must be in (0, 1)");
  }
  if (!(total_rate > 0) || !std::isfinite(total_rate)) {
    throw std::invalid_argument("split_rate: the rate must be > 0");
  }
  const auto latency =
      static_cast<std::size_t>(std::count(kinds.begin(), kinds.end(), AgentKind::kLatency));
  const std::size_t others = kinds.size() - latency;
  // With only one group, that group carries everything.
  const double latency_total =
      latency == 0 ? 0.0 : (others == 0 ? total_rate : total_rate * latency_share);
  const double others_total = total_rate - latency_total;
  std::vector<double> shares;
  shares.reserve(kinds.size());
  for (AgentKind k : kinds) {
    shares.push_back(k == AgentKind::kLatency ? latency_total / static_cast<double>(latency)
                                              : others_total / static_cast<double>(others));
  }
  // Rounding leaves the sum (added in index order) a few ulps off the
  // total; the last share takes up the difference. With P the sum of the
  // others, the sum is fl(P + last), monotone in `last`: start at T - P and
  // step by ulps towards T. When T lies between two ties (P + last can only
  // fall halfway, and rounds to the even neighbours), the share before the
  // last moves by one ulp, which changes P, and the search runs again.
  for (int attempt = 0; attempt < 16; ++attempt) {
    const double others_sum = std::accumulate(shares.begin(), shares.end() - 1, 0.0);
    double& last = shares.back();
    last = total_rate - others_sum;
    const bool up = others_sum + last < total_rate;
    for (int step = 0; step < 8 && others_sum + last != total_rate; ++step) {
      const double next = std::nextafter(last, up ? INFINITY : -INFINITY);
      if ((others_sum + next > total_rate) == up && others_sum + next != total_rate) break;
      last = next;
    }
    if (others_sum + last == total_rate || shares.size() < 2) break;
    double& before = shares[shares.size() - 2];
    before = std::nextafter(before, INFINITY);
  }
  return shares;
}

namespace {

// SplitMix64's finaliser: a bijection of 64-bit words, so distinct inputs
// give distinct seeds.
uint64_t mix(uint64_t x) {
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace

EngineConfig agent_engine(const EngineConfig& whole, AgentKind kind, double share,
                          std::size_t agent_index) {
  if (!(share > 0) || !std::isfinite(share)) {
    throw std::invalid_argument("agent_engine: the share must be > 0");
  }
  EngineConfig e = whole;
  e.schedule.rate_per_s = share;
  if (kind == AgentKind::kThroughput) e.record_samples = false;
  if (kind == AgentKind::kLatency) e.connections = e.threads;
  // whole.seed + golden·(index + 1) is distinct per index (the golden ratio
  // constant is odd), and mix keeps it so while decorrelating the agents'
  // seeds from the rounds' consecutive ones.
  e.seed = mix(whole.seed + 0x9e3779b97f4a7c15ULL * (static_cast<uint64_t>(agent_index) + 1));
  return e;
}

CalibrationCheck combine_checks(const std::vector<AgentRound>& agents, const EngineResult& merged,
                                double target_rps, const CalibrationLimits& limits) {
  CalibrationCheck out;
  out.target_rps = target_rps;
  // Rates of concurrent senders add: the merged offered rate and throughput
  // are the sums of the agents' own (a throughput agent returns no samples,
  // so the merged samples could not give its throughput).
  for (const auto& a : agents) {
    out.offered_rps += a.check.offered_rps;
    out.throughput_rps += a.check.throughput_rps;
  }
  out.rate_ok = out.offered_rps > 0 && std::fabs(out.throughput_rps - out.offered_rps) <=
                                           limits.rate_tolerance * out.offered_rps;
  // Late sends: counted over all agents, each judged on its own share
  // (late_ok only when every agent's is).
  out.sent = merged.sent;
  out.late = merged.late;
  out.late_fraction =
      merged.sent > 0 ? static_cast<double>(merged.late) / static_cast<double>(merged.sent) : 0.0;
  out.slot_late = merged.slot_late;
  out.slot_late_fraction =
      merged.sent > 0 ? static_cast<double>(merged.slot_late) / static_cast<double>(merged.sent)
                      : 0.0;
  // Closed loop: the slots of all agents together (C×K each) carry the whole
  // rate; it is closed-loop when any agent's own slots cannot carry its share
  // (structural: the controller does not retry it). The mean in-flight time
  // is weighted by the agents' sends.
  double in_flight_weighted = 0;
  uint64_t weight = 0;
  for (const auto& a : agents) {
    const auto& cl = a.check.closed_loop;
    out.closed_loop.slots += cl.slots;
    out.closed_loop.slots_needed += cl.slots_needed;
    out.closed_loop.capacity_rps += cl.capacity_rps;
    out.closed_loop.closed_loop = out.closed_loop.closed_loop || cl.closed_loop;
    in_flight_weighted += cl.mean_in_flight_ns * static_cast<double>(a.sent);
    weight += a.sent;
  }
  out.closed_loop.mean_in_flight_ns =
      weight > 0 ? in_flight_weighted / static_cast<double>(weight) : 0.0;
  // Anderson–Darling: each agent tests its own send gaps (the merged
  // series is a superposition whose gaps each agent's clock cannot see
  // whole). The round passes when every applied test passes and shows the
  // worst one: the largest A² over its critical value.
  double worst = -1;
  bool any_applied = false;
  bool all_passed = true;
  for (const auto& a : agents) {
    if (!a.check.late_ok) out.late_ok = false;
    const auto& ad = a.check.ad;
    if (!ad.applied) continue;
    any_applied = true;
    all_passed = all_passed && ad.passed;
    const double ratio = ad.critical > 0 ? ad.statistic / ad.critical : ad.statistic;
    if (ratio > worst) {
      worst = ratio;
      out.ad = ad;
      out.ad.note = "agent " + a.agent + "'s, the worst of the agents'" +
                    (ad.note.empty() ? "" : ": " + ad.note);
    }
  }
  if (!any_applied && !agents.empty()) out.ad = agents.front().check.ad;  // its note says why
  out.ad.passed = all_passed;
  for (const auto& a : agents) {
    for (const auto& r : a.check.reasons) out.reasons.push_back("agent " + a.agent + ": " + r);
  }
  if (!out.rate_ok) {
    char buf[160];
    std::snprintf(buf, sizeof buf,
                  "target load not reached by the agents together (achieved %.0f rps of %.0f; "
                  "offered %.0f)",
                  out.throughput_rps, out.target_rps, out.offered_rps);
    out.reasons.push_back(buf);
  }
  return out;
}

void shift_times(EngineResult& result, int64_t by_ns) {
  for (auto& s : result.samples) s.intended_ns += by_ns;
  for (auto& t : result.intended_ns) t += by_ns;
  if (result.scheduled > 0) {
    result.first_intended_ns += by_ns;
    result.last_intended_ns += by_ns;
  }
}

void merge_into(EngineResult& into, EngineResult part) {
  const bool first = into.scheduled == 0;
  into.samples.insert(into.samples.end(), std::make_move_iterator(part.samples.begin()),
                      std::make_move_iterator(part.samples.end()));
  into.intended_ns.insert(into.intended_ns.end(), part.intended_ns.begin(), part.intended_ns.end());
  into.latency.merge(part.latency);
  into.lateness.merge(part.lateness);
  into.timer_lateness.merge(part.timer_lateness);
  into.slot_wait.merge(part.slot_wait);
  into.scheduled += part.scheduled;
  into.sent += part.sent;
  into.completed += part.completed;
  into.late += part.late;
  into.slot_late += part.slot_late;
  into.timer.add(part.timer);
  into.errors.add(part.errors);
  add(into.by_type, part.by_type);
  into.reconnects += part.reconnects;
  into.timestamp_fallbacks += part.timestamp_fallbacks;
  into.setup.add(part.setup);
  if (part.scheduled > 0) {
    into.first_intended_ns =
        first ? part.first_intended_ns : std::min(into.first_intended_ns, part.first_intended_ns);
    into.last_intended_ns =
        first ? part.last_intended_ns : std::max(into.last_intended_ns, part.last_intended_ns);
  }
  if (into.type_names.empty()) into.type_names = std::move(part.type_names);
  into.thread_cpus.insert(into.thread_cpus.end(), part.thread_cpus.begin(), part.thread_cpus.end());
}

void sort_samples(EngineResult& result) {
  std::stable_sort(result.samples.begin(), result.samples.end(),
                   [](const Sample& a, const Sample& b) { return a.intended_ns < b.intended_ns; });
  std::sort(result.intended_ns.begin(), result.intended_ns.end());
}

}  // namespace nabla::loadgen
