// The campaign's fakes; see fake_environment.hh.
#include "fake_environment.hh"

#include <algorithm>
#include <cmath>
#include <random>
#include <stdexcept>

namespace nabla::campaign::fake {

FlowEnd tcp_flow_end(const std::string& local, std::uint16_t lport, int pid,
                     const std::string& comm, const std::string& remote, std::uint16_t rport,
                     const std::string& direction) {
  FlowEnd f;
  f.proto = "tcp";
  f.local_addr = local;
  f.local_port = lport;
  f.pid = pid;
  f.comm = comm;
  f.remote_addr = remote;
  f.remote_port = rport;
  f.direction = direction;
  f.segments_out = f.segments_in = 100;
  f.bytes_out = f.bytes_in = 10'000;
  return f;
}

void FakeClock::sleep_until(std::int64_t t_ns) {
  now_ns_ = std::max(now_ns_, t_ns);
  while (!actions_.empty() && actions_.begin()->first <= now_ns_) {
    auto action = std::move(actions_.begin()->second);
    actions_.erase(actions_.begin());
    action();
  }
}

void FakeClock::at(std::int64_t at_ns, std::function<void()> action) {
  actions_.emplace(at_ns, std::move(action));
}

std::optional<FlowsPage> FakeDaemons::list_flows(const std::string& node, std::uint64_t cursor) {
  auto it = flows.find(node);
  if (it == flows.end()) return std::nullopt;
  if (live_flows) return FlowsPage{live_flows(node, clock_.now_ns()), cursor + 1};
  // Every record at the first call; nothing changed afterwards.
  return cursor == 0 ? FlowsPage{it->second, 1} : FlowsPage{{}, cursor};
}

std::string FakeDaemons::start_injection(const std::string& node, const InjectionRequest& request) {
  if (refuse_start_on.count(node) > 0) throw std::runtime_error("injection refused");
  FakeInjection inj;
  inj.node = node;
  inj.id = "inj-" + std::to_string(injections_.size() + 1);
  inj.request = request;
  inj.started_ns = clock_.now_ns();
  injections_.push_back(inj);
  if (on_start) on_start(injections_.back());
  return inj.id;
}

FakeInjection& FakeDaemons::find(const std::string& node, const std::string& id) {
  for (FakeInjection& i : injections_) {
    if (i.node == node && i.id == id && !i.stopped_ns) return i;
  }
  throw std::runtime_error("no injection " + id);
}

InjectionStats FakeDaemons::stop_injection(const std::string& node, const std::string& id) {
  FakeInjection& inj = find(node, id);
  inj.stopped_ns = clock_.now_ns();
  if (inj.request.fault) {  // a constant delay: every packet in the high half
    const auto& delay = inj.request.fault->delay;
    InjectionStats s;
    s.packets = s.delayed = 100;
    s.high = HalfStats{100, delay ? actual_fraction * static_cast<double>(delay->amplitude_ns) : 0};
    return s;
  }
  const double actual_ns = actual_fraction * static_cast<double>(inj.request.amplitude_ns);
  InjectionStats s;
  s.packets = 100;
  s.delayed = 50;
  s.high = HalfStats{50, actual_ns};
  s.low = HalfStats{50, 0.0};
  s.actual_max_ns = actual_ns;
  if (on_stop) on_stop(inj, s);
  return s;
}

void FakeDaemons::abandon_injection(const std::string& node, const std::string& id) noexcept {
  for (FakeInjection& i : injections_) {
    if (i.node == node && i.id == id && !i.stopped_ns) {
      i.stopped_ns = clock_.now_ns();
      i.abandoned = true;
    }
  }
}

void FakeDaemons::renew_lease(const std::string& node, const std::string& id) {
  ++renewals_;
  if (fail_renewal_from && renewals_ >= *fail_renewal_from) {
    throw std::runtime_error("unknown injection " + id);
  }
  find(node, id).renewals_ns.push_back(clock_.now_ns());
}

double FakeDaemons::delay_ns(const std::string& link_spec, std::int64_t t_ns) const {
  double delay = 0;
  for (const FakeInjection& i : injections_) {
    const InjectionRequest& r = i.request;
    if (r.link_spec != link_spec || t_ns < i.started_ns) continue;
    if (r.fault) {  // an experiment's constant delay
      const bool on = !i.stopped_ns || t_ns < *i.stopped_ns;
      if (on && r.fault->delay) {
        delay += actual_fraction * static_cast<double>(r.fault->delay->amplitude_ns);
      }
      continue;
    }
    std::int64_t end_ns = i.stopped_ns.value_or(INT64_MAX);
    if (r.cycles > 0) end_ns = std::min(end_ns, i.started_ns + r.cycles * r.period_ns);
    if (t_ns >= end_ns) continue;
    const bool high = (t_ns - i.started_ns) % r.period_ns < r.period_ns / 2;
    if (high) delay += actual_fraction * static_cast<double>(r.amplitude_ns);
  }
  return delay;
}

std::size_t FakeDaemons::running() const {
  return static_cast<std::size_t>(
      std::count_if(injections_.begin(), injections_.end(),
                    [](const FakeInjection& i) { return !i.stopped_ns; }));
}

namespace {

class FakeRun final : public LoadRun {
 public:
  FakeRun(const FakeDaemons& daemons, const FakeServiceModel& model,
          const loadgen::EngineConfig& config, std::int64_t start_ns)
      : daemons_(daemons), model_(model), config_(config), start_ns_(start_ns) {}

  loadgen::EngineResult take() override {
    loadgen::EngineResult r;
    for (const auto& u : config_.protocol.urls) r.type_names.push_back(u.path);
    for_each_arrival([&](loadgen::Sample s, double noise_ns) {
      double latency = model_.base_ns.at(s.type) + noise_ns;
      for (const auto& [link, gradient] : model_.gradients) {
        latency += gradient.at(s.type) * daemons_.delay_ns(link, s.intended_ns);
      }
      for (const auto& [link, response] : model_.responses) {
        latency += response(s.type, daemons_.delay_ns(link, s.intended_ns));
      }
      for (const FakeServiceModel::Interaction& x : model_.interactions) {
        latency += x.per_type.at(s.type) * daemons_.delay_ns(x.a, s.intended_ns) *
                   daemons_.delay_ns(x.b, s.intended_ns);
      }
      s.latency_ns = std::max<std::int64_t>(1, std::llround(latency));
      r.samples.push_back(s);
    });
    r.sent = r.scheduled = r.completed = r.samples.size();
    for (const loadgen::Sample& s : r.samples) r.intended_ns.push_back(s.intended_ns);
    if (!r.samples.empty()) {
      r.first_intended_ns = r.samples.front().intended_ns;
      r.last_intended_ns = r.samples.back().intended_ns;
    }
    return r;
  }

  // The run's Poisson arrivals, each with its type and noise, in order; the
  // same sequence every call (one seed).
  template <typename F>
  void for_each_arrival(F&& f) const {
    std::vector<double> weights;
    for (const auto& u : config_.protocol.urls) weights.push_back(u.weight);
    std::mt19937_64 rng(config_.seed);
    std::exponential_distribution<double> gap_s(config_.schedule.rate_per_s);
    std::discrete_distribution<std::uint32_t> type(weights.begin(), weights.end());
    std::normal_distribution<double> noise(0.0, model_.noise_ns);
    double t_ns = static_cast<double>(start_ns_);
    const double end_ns = static_cast<double>(start_ns_ + config_.duration_ns);
    while ((t_ns += gap_s(rng) * 1e9) < end_ns) {
      loadgen::Sample s;
      s.intended_ns = static_cast<std::int64_t>(t_ns);
      s.type = type(rng);
      f(s, noise(rng));
    }
  }

 private:
  const FakeDaemons& daemons_;
  const FakeServiceModel& model_;
  loadgen::EngineConfig config_;
  std::int64_t start_ns_;
};

}  // namespace

std::unique_ptr<LoadRun> FakeService::start(const loadgen::EngineConfig& config,
                                            std::int64_t start_ns) {
  ++runs_;
  auto run = std::make_unique<FakeRun>(daemons_, model_, config, start_ns);
  // The campaign took the run before (its samples reach past the clock,
  // which a fake take() does not advance): its traffic ended by now.
  std::erase_if(arrivals_, [start_ns](const Arrival& a) { return a.t_ns >= start_ns; });
  run->for_each_arrival([this](const loadgen::Sample& s, double) {
    arrivals_.push_back({s.intended_ns, s.type});
  });
  return run;
}

std::uint64_t FakeService::segments_sent(const std::string& link_spec,
                                         std::int64_t before_ns) const {
  const auto it = model_.messages.find(link_spec);
  if (it == model_.messages.end()) return 0;
  double segments = 0;
  for (const Arrival& a : arrivals_) {
    if (a.t_ns < before_ns) segments += it->second.at(a.type);
  }
  return static_cast<std::uint64_t>(std::llround(segments));
}

}  // namespace nabla::campaign::fake
