// Campaign orchestration; the design is in campaign.hh.
#include "nabla/campaign/campaign.hh"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <exception>
#include <random>
#include <stdexcept>
#include <thread>

#include "nabla/analysis/training.hh"
#include "nabla/common/clock.hh"
#include "nabla/common/units.hh"
#include "nabla/campaign/daemons.hh"
#include "nabla/campaign/links.hh"
#include "nabla/campaign/store.hh"
#include "nabla/common/units.hh"
#include "nabla/loadgen/engine.hh"

namespace nabla::campaign {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;

constexpr milliseconds kConnectTimeout{3000};
constexpr std::int64_t kEngineLeadNs = 20'000'000;  // first send after the engine starts
// The engine runs past the window by this; it also bounds inject.start.
constexpr std::int64_t kEngineSlackNs = 300'000'000;
constexpr std::int64_t kSliceNs = 50'000'000;  // wait granularity (signals, leases)
constexpr std::int64_t kSniffPollNs = 500'000'000;

class Interrupted : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// One engine run on its own thread. Destroyed before take() (unwinding on a
// signal or an error) it tells the engine to stop, which it does within
// ~10 ms, so Ctrl-C never waits for the rest of a long training phase and
// unwinding never leaves a thread behind.
class EngineRun {
 public:
  EngineRun(loadgen::EngineConfig config, std::int64_t start_ns) {
    config.stop = &stop_;
    thread_ = std::thread([this, config = std::move(config), start_ns] {
      try {
        result_ = loadgen::run_engine(config, start_ns);
      } catch (...) {
        error_ = std::current_exception();
      }
    });
  }
  ~EngineRun() {
    stop_.store(true);
    if (thread_.joinable()) thread_.join();
  }
  EngineRun(const EngineRun&) = delete;
  EngineRun& operator=(const EngineRun&) = delete;

  loadgen::EngineResult take() {
    thread_.join();
    if (error_) std::rethrow_exception(error_);
    return std::move(result_);
  }

 private:
  std::atomic<bool> stop_{false};
  loadgen::EngineResult result_;
  std::exception_ptr error_;
  std::thread thread_;
};

loadgen::EngineConfig engine_config(const WorkloadSpec& w, std::int64_t duration_ns,
                                    std::uint64_t seed) {
  loadgen::EngineConfig c;
  c.host = w.host;
  c.port = w.port;
  c.threads = w.threads;
  c.connections = w.connections;
  c.max_outstanding = w.outstanding;
  c.schedule.rate_per_s = w.rate_rps;
  if (w.interarrival == "fixed") {
    c.schedule.kind = loadgen::ScheduleKind::kFixed;
  } else if (w.interarrival == "uniform") {
    c.schedule.kind = loadgen::ScheduleKind::kUniform;
  } else if (w.interarrival.rfind("lognormal", 0) == 0) {
    c.schedule.kind = loadgen::ScheduleKind::kLognormal;
    c.schedule.lognormal_sigma = w.lognormal_sigma;
  }
  if (w.http) {
    c.protocol.kind = loadgen::ProtocolSpec::Kind::kHttp;
    c.protocol.urls.clear();
    for (const auto& [url, weight] : w.mix) c.protocol.urls.push_back({url, weight});
    c.protocol.host_header = w.host;
  } else {
    c.protocol.kind = loadgen::ProtocolSpec::Kind::kEcho;
  }
  c.duration_ns = duration_ns;
  c.request_timeout_ns = w.timeout_ns;
  c.seed = seed;
  return c;
}

std::vector<analysis::LatencyRecord> to_records(const loadgen::EngineResult& r) {
  std::vector<analysis::LatencyRecord> out;
  out.reserve(r.samples.size());
  for (const loadgen::Sample& s : r.samples) {
    out.push_back({s.intended_ns, s.latency_ns, static_cast<std::int32_t>(s.type)});
  }
  return out;
}

db::TimestampSource db_source(const loadgen::EngineResult& r) {
  if (r.samples.empty()) return db::TimestampSource::kUser;
  switch (r.samples.front().source) {
    case loadgen::TimestampSource::kHardware:
      return db::TimestampSource::kHardware;
    case loadgen::TimestampSource::kSoftware:
      return db::TimestampSource::kSoftware;
    case loadgen::TimestampSource::kUser:
      break;
  }
  return db::TimestampSource::kUser;
}

std::vector<analysis::LatencyRecord> of_type(const std::vector<analysis::LatencyRecord>& r,
                                             std::int32_t type) {
  std::vector<analysis::LatencyRecord> out;
  for (const auto& x : r) {
    if (x.type == type) out.push_back(x);
  }
  return out;
}

std::string format_ratio(double r) {
  const double rounded = std::round(r * 10.0) / 10.0;
  std::string s = std::to_string(rounded);
  return s.substr(0, s.find('.') + 2);
}

double half_mean(const json& stats, const char* half, std::size_t& count) {
  const json& h = stats.at("halves").at(half);
  count = h.value("count", std::size_t{0});
  return h["mean"].is_number() ? h["mean"].get<double>() : 0.0;
}

class Campaign {
 public:
  Campaign(const CampaignSpec& spec, db::Store& store, const CampaignOptions& options,
           CampaignOutcome& out)
      : spec_(spec), options_(options), out_(out), rng_(out.seed) {
    recorder_.emplace(store, spec, options.kind, out.seed, options.tool_version);
    out_.run_id = recorder_->run_id();
  }

  CampaignRecorder& recorder() { return *recorder_; }

  void run() {
    note("campaign " + spec_.name + ": run " + std::to_string(out_.run_id) + ", seed " +
         std::to_string(out_.seed));
    daemons_.emplace(spec_, kConnectTimeout);
    leases_.emplace(spec_, spec_.gradient.lease_ns);
    discover();
    train();
    std::size_t index = 0;
    std::size_t measurable = 0;
    for (const CampaignLink& l : out_.links) measurable += l.measurable ? 1 : 0;
    for (CampaignLink& l : out_.links) {
      if (!l.measurable) continue;
      ++index;
      measure(l, index, measurable);
    }
  }

 private:
  void note(const std::string& line) {
    if (options_.log != nullptr) *options_.log << line << '\n' << std::flush;
  }

  std::uint64_t next_seed() { return rng_(); }

  // Waits until `t_ns`, reporting progress; throws on a signal or a lease failure.
  void wait_until(std::int64_t t_ns) {
    while (true) {
      check();
      const std::int64_t now = common::monotonic_ns();
      if (now >= t_ns) return;
      report(now);
      std::this_thread::sleep_for(std::chrono::nanoseconds(std::min(kSliceNs, t_ns - now)));
    }
  }

  void check() {
    if (options_.cancel != nullptr && options_.cancel->load() != 0) {
      out_.interrupted = true;
      throw Interrupted("interrupted by signal " + std::to_string(options_.cancel->load()));
    }
    if (leases_) {
      if (auto e = leases_->error()) throw std::runtime_error(*e);
    }
  }

  void report(std::int64_t now) {
    if (!options_.progress || now - last_report_ < 250'000'000) return;
    last_report_ = now;
    CampaignProgress p = progress_;
    if (p.bins_total > 0 && out_.bin_width_ns > 0 && now > phase_start_) {
      p.bins = std::min<std::size_t>(
          p.bins_total, static_cast<std::size_t>((now - phase_start_) / out_.bin_width_ns));
    }
    p.left_ns = deadline_ > now ? deadline_ - now : 0;
    options_.progress(p);
  }

  void set_phase(const std::string& name, std::size_t link, std::size_t links, std::size_t bins,
                 std::int64_t start_ns) {
    progress_ = CampaignProgress{name, link, links, 0, bins, 0};
    phase_start_ = start_ns;
  }

  // ---------------------------------------------------------------- discover
  void discover() {
    const LinksSpec& ls = spec_.links;
    const std::int64_t calib_ns =
        ls.discover ? std::max(ls.discover_for_ns, spec_.workload.warmup_ns)
                    : std::max<std::int64_t>(spec_.workload.warmup_ns, 1'000'000'000);
    const std::int64_t t0 = common::monotonic_ns() + kEngineLeadNs;
    deadline_ = t0 + calib_ns;
    set_phase("discovery", 0, 0, 0, t0);
    std::vector<NodeFlows> nodes;
    {
      EngineRun engine(engine_config(spec_.workload, calib_ns, next_seed()), t0);
      std::vector<std::uint64_t> cursors;
      for (const CampaignNode& n : spec_.nodes) {
        nodes.push_back(NodeFlows{n.name, n.addresses, {}});
        cursors.push_back(0);
      }
      while (ls.discover) {
        poll_sniffers(nodes, cursors);
        const std::int64_t left = t0 + calib_ns - common::monotonic_ns();
        if (left <= 0) break;
        wait_until(common::monotonic_ns() + std::min(left, kSniffPollNs));
      }
      wait_until(t0 + calib_ns);
      if (ls.discover) poll_sniffers(nodes, cursors);  // flows seen during the last interval
      const loadgen::EngineResult r = engine.take();
      out_.types = r.type_names;
      const std::vector<analysis::LatencyRecord> records = to_records(r);
      // The first tenth is the connections' warm-up.
      std::vector<analysis::LatencyRecord> calib;
      for (const auto& x : records) {
        if (x.t_ns >= t0 + calib_ns / 10) calib.push_back(x);
      }
      out_.bin_width_ns = campaign_bin_width_ns(calib, spec_.gradient.requests_per_bin, out_.types);
      if (r.completed == 0) {
        throw std::runtime_error("the workload got no answer from " + spec_.workload.target);
      }
    }
    std::vector<Link> discovered;
    if (ls.discover) {
      JoinOptions jo;
      jo.min_messages = ls.min_messages;
      discovered = join_flows(nodes, jo);
    }
    out_.links = assemble_links(spec_, nodes, discovered);
    std::size_t measurable = 0;
    {
      db::Transaction tx(recorder_->store_database());
      for (CampaignLink& l : out_.links) {
        l.link_id = recorder_->add_link(l.link);
        measurable += l.measurable ? 1 : 0;
      }
      for (const NodeFlows& n : nodes) {
        for (const FlowEnd& f : n.flows) {
          recorder_->add_flow(n.name, f, sending_link(n.name, f), t0, t0 + calib_ns);
        }
      }
      tx.commit();
    }
    note(std::to_string(out_.links.size()) + " links, " + std::to_string(measurable) +
         " measurable; bin width " + common::format_duration_ns(out_.bin_width_ns));
    for (const CampaignLink& l : out_.links) {
      if (!l.measurable) note("  not measured: " + l.label + " (" + l.note + ")");
    }
    if (measurable == 0) throw std::runtime_error("no measurable link (see the notes above)");
    const GradientSpec& g = spec_.gradient;
    out_.budget_ns =
        campaign_budget_ns(out_.bin_width_ns, g.bins, g.chunks, measurable,
                           static_cast<double>(g.min_bins_per_period), spec_.workload.warmup_ns, 0);
    deadline_ = common::monotonic_ns() + out_.budget_ns;
    note("estimated time: " + common::format_duration_ns(out_.budget_ns / 1'000'000 * 1'000'000) +
         " (training " + std::to_string(g.chunks * g.bins) + " bins, then " +
         std::to_string(measurable) + " links x (" + std::to_string(g.bins) +
         " bins + one cycle), a warm-up before each phase)");
  }

  // The link a flow record is the sending side of, if it is one of ours.
  std::optional<std::int64_t> sending_link(const std::string& node, const FlowEnd& f) const {
    const CampaignNode* peer = spec_.node_by_address(f.remote_addr);
    const std::string peer_host = peer != nullptr ? peer->name : f.remote_addr;
    for (const CampaignLink& l : out_.links) {
      if (l.link.proto == f.proto && l.link.src.host == node && l.link.src.port == f.local_port &&
          l.link.dst.host == peer_host && l.link.dst.port == f.remote_port) {
        return l.link_id;
      }
    }
    return std::nullopt;
  }

  void poll_sniffers(std::vector<NodeFlows>& nodes, std::vector<std::uint64_t>& cursors) {
    for (std::size_t i = 0; i < spec_.nodes.size(); ++i) {
      const CampaignNode& n = spec_.nodes[i];
      common::RpcClient* c = daemons_->sniffd(n.name);
      if (c == nullptr) continue;
      json answer;
      try {
        answer = c->call("flows.list",
                         {{"since", cursors[i]}, {"min_messages", 1}, {"include_control", false}},
                         kConnectTimeout);
      } catch (const std::exception& e) {
        throw std::runtime_error("node " + n.name + ": flows.list failed: " + e.what());
      }
      std::vector<FlowEnd> update;
      for (const json& f : answer.at("flows")) update.push_back(parse_flow(f));
      merge_flows(nodes[i].flows, update);
      cursors[i] = answer.at("cursor").get<std::uint64_t>();
    }
  }

  // ---------------------------------------------------------------- train
  void train() {
    const GradientSpec& g = spec_.gradient;
    const std::int64_t w = out_.bin_width_ns;
    const std::int64_t window = static_cast<std::int64_t>(g.chunks * g.bins) * w;
    const std::int64_t warmup = spec_.workload.warmup_ns;
    const std::int64_t t0 = common::monotonic_ns() + kEngineLeadNs;
    const std::int64_t start = t0 + warmup;
    set_phase("training", 0, 0, g.chunks * g.bins, start);
    EngineRun engine(engine_config(spec_.workload, warmup + window + kEngineSlackNs, next_seed()),
                     t0);
    wait_until(start + window);
    const loadgen::EngineResult r = engine.take();
    const auto records = to_records(r);
    analysis::TrainingOptions to;
    to.bins = g.bins;
    to.chunks = g.chunks;
    to.delay_scale = g.delay_scale;
    to.min_bins_per_period = g.min_bins_per_period;
    for (std::size_t t = 0; t < out_.types.size(); ++t) {
      const auto mine = of_type(records, static_cast<std::int32_t>(t));
      analysis::BinnedSeries s;
      try {
        s = analysis::bin_latencies(mine, start, w, g.chunks * g.bins);
      } catch (const std::invalid_argument&) {
        throw std::runtime_error("training: no " + out_.types[t] + " request completed");
      }
      if (!s.reliable) {
        out_.warnings.push_back("training: " + out_.types[t] + " had " +
                                std::to_string(s.filled_bins) + " empty bins (interpolated)");
      }
      trainings_.push_back(analysis::train(s.mean_latency_ns, w, to));
      const WindowStats ws =
          window_stats(records, static_cast<std::int32_t>(t), start, start + window);
      out_.training_mean_ns.push_back(ws.mean_latency_ns);
      out_.training_rate_rps.push_back(ws.rate_rps(window));
      out_.training_completion.push_back(
          completion_ratio(records, static_cast<std::int32_t>(t), start, start + window));
    }
    kd_ = choose_k_d(trainings_);
    out_.k_d = kd_.k_d;
    out_.training_type_amplitude_ns = kd_.per_type_amplitude_ns;
    out_.training_amplitude_ns =
        std::clamp(kd_.amplitude_ns, static_cast<double>(g.min_amplitude_ns),
                   static_cast<double>(g.max_amplitude_ns));
    out_.period_ns = std::llround(static_cast<double>(g.bins) * static_cast<double>(w) /
                                  static_cast<double>(kd_.k_d));
    db::Phase p;
    p.kind = db::PhaseKind::kTraining;
    p.started_ns = start;
    p.ended_ns = start + window;
    p.bin_width_ns = w;
    p.bins = static_cast<std::int64_t>(g.bins);
    p.chunks = static_cast<std::int64_t>(g.chunks);
    p.k_d = kd_.k_d;
    p.amplitude_ns = std::llround(out_.training_amplitude_ns);
    db::Transaction tx(recorder_->store_database());
    const std::int64_t id = recorder_->add_phase(p);
    recorder_->add_samples(id, records, out_.types, db_source(r), start, start + window);
    tx.commit();
    note("training: k_d " + std::to_string(kd_.k_d) + ", period " +
         common::format_duration_ns(out_.period_ns / 1000 * 1000) + ", amplitude " +
         common::format_duration_ns(std::llround(out_.training_amplitude_ns) / 1000 * 1000) +
         (kd_.amplitude_ns > out_.training_amplitude_ns ? " (capped by max_amplitude)" : ""));
  }

  json wave(double amplitude_ns, int cycles) const {
    return json{{"kind", "square"},
                {"amplitude", std::llround(amplitude_ns)},
                {"period", out_.period_ns},
                {"duty", 0.5},
                {"cycles", cycles}};
  }

  json inject_params(const CampaignLink& l, double amplitude_ns, int cycles) {
    return json{{"link", l.spec},
                {"direction", "out"},
                {"delay", wave(amplitude_ns, cycles)},
                {"lease_s", static_cast<double>(spec_.gradient.lease_ns) / 1e9},
                {"seed", next_seed() >> 1}};
  }

  struct Injected {
    json stats;
    std::int64_t anchor_ns = 0;
    std::int64_t ended_ns = 0;
    std::string id;
    double delta_l_ns = 0;
    bool measured = false;
  };

  // Runs the engine for warmup + `window_ns`, injecting from the end of the
  // warm-up until `window_ns` (+ tail) later.
  loadgen::EngineResult inject_phase(const CampaignLink& l, double amplitude_ns, int cycles,
                                     std::int64_t window_ns, std::int64_t tail_ns, Injected& inj) {
    const std::int64_t warmup = spec_.workload.warmup_ns;
    const std::int64_t t0 = common::monotonic_ns() + kEngineLeadNs;
    EngineRun engine(
        engine_config(spec_.workload, warmup + window_ns + tail_ns + kEngineSlackNs, next_seed()),
        t0);
    phase_start_ = t0 + warmup;
    wait_until(t0 + warmup);
    {
      ActiveInjection a(*daemons_, *leases_, l.src_node, inject_params(l, amplitude_ns, cycles));
      inj.anchor_ns = a.anchor_ns();
      inj.id = a.id();
      phase_start_ = inj.anchor_ns;
      if (inj.anchor_ns > t0 + warmup + kEngineSlackNs) {
        throw std::runtime_error("node " + l.src_node + ": inject.start took longer than " +
                                 common::format_duration_ns(kEngineSlackNs));
      }
      wait_until(inj.anchor_ns + window_ns + tail_ns);
      inj.stats = a.stop();
      inj.ended_ns = common::monotonic_ns();
    }
    std::size_t hc = 0, lc = 0;
    const double hm = half_mean(inj.stats, "high", hc);
    const double lm = half_mean(inj.stats, "low", lc);
    const auto d = delta_l_from_halves(hc, hm, lc, lm);
    inj.measured = d.has_value();
    inj.delta_l_ns = d.value_or(amplitude_ns);
    return engine.take();
  }

  std::int64_t store_injection(std::int64_t phase_id, const CampaignLink& l, const Injected& inj,
                               double amplitude_ns) {
    db::Injection row;
    row.phase_id = phase_id;
    row.link_id = l.link_id;
    row.node = l.src_node;
    row.waveform = "square";
    row.spec_json = json{{"link", l.spec}, {"id", inj.id}, {"delay", wave(amplitude_ns, 0)}}.dump();
    row.requested_delay_ns = std::llround(amplitude_ns);
    row.period_ns = out_.period_ns;
    row.duty = 0.5;
    row.started_ns = inj.anchor_ns;
    row.ended_ns = inj.ended_ns;
    const json& s = inj.stats;
    row.packets = s.value("packets", std::int64_t{0});
    row.bytes = s.value("bytes", std::int64_t{0});
    row.delayed = s.value("delayed", std::int64_t{0});
    row.dropped = s.value("dropped", std::int64_t{0});
    if (inj.measured) row.actual_mean_ns = inj.delta_l_ns;
    if (s.contains("actual_delay_ns")) {
      const json& a = s["actual_delay_ns"];
      auto opt = [&](const char* k) -> std::optional<double> {
        return a.contains(k) && a[k].is_number() ? std::optional<double>(a[k].get<double>())
                                                 : std::nullopt;
      };
      row.actual_std_ns = opt("std");
      row.actual_p50_ns = opt("p50");
      row.actual_p99_ns = opt("p99");
      row.actual_max_ns = opt("max");
    }
    return recorder_->add_injection(row);
  }

  // Stores one phase that injected on `l` (adaptive or active): its row, the
  // injection the daemon reported, and the samples sent in
  // [anchor, anchor + window_ns). Runs inside the caller's transaction, so
  // the active phase can add its gradients to the same commit; returns the
  // phase id.
  std::int64_t store_injected_phase(db::PhaseKind kind, const CampaignLink& l, const Injected& inj,
                                    double amplitude_ns, std::int64_t bins,
                                    const loadgen::EngineResult& r,
                                    const std::vector<analysis::LatencyRecord>& records,
                                    std::int64_t window_ns) {
    db::Phase p;
    p.kind = kind;
    p.link_id = l.link_id;
    p.started_ns = inj.anchor_ns;
    p.ended_ns = inj.ended_ns;
    p.bin_width_ns = out_.bin_width_ns;
    p.bins = bins;
    p.k_d = kd_.k_d;
    p.amplitude_ns = std::llround(amplitude_ns);
    const std::int64_t id = recorder_->add_phase(p);
    store_injection(id, l, inj, amplitude_ns);
    recorder_->add_samples(id, records, out_.types, db_source(r), inj.anchor_ns,
                           inj.anchor_ns + window_ns);
    return id;
  }

  // ---------------------------------------------------------------- measure
  void measure(CampaignLink& l, std::size_t index, std::size_t count) {
    const GradientSpec& g = spec_.gradient;
    const std::int64_t w = out_.bin_width_ns;
    LinkMeasurement m;
    m.label = l.label;
    m.training_amplitude_ns = out_.training_amplitude_ns;
    note("link " + std::to_string(index) + "/" + std::to_string(count) + ": " + l.label +
         " (inject on " + l.src_node + ": " + l.spec + ")");

    // Adaptive sub-phase: one cycle at the training amplitude.
    set_phase("adaptive", index, count,
              static_cast<std::size_t>(out_.period_ns / std::max<std::int64_t>(w, 1)), 0);
    Injected a;
    const loadgen::EngineResult ra =
        inject_phase(l, m.training_amplitude_ns, 1, out_.period_ns, kSliceNs, a);
    const auto rec_a = to_records(ra);
    for (std::size_t t = 0; t < out_.types.size(); ++t) {
      m.rough.push_back(rough_gradient(rec_a, static_cast<std::int32_t>(t), a.anchor_ns,
                                       out_.period_ns, a.delta_l_ns));
    }
    m.amplitude_ns = adapted_amplitude_ns(kd_.per_type_amplitude_ns, m.rough,
                                          static_cast<double>(g.min_amplitude_ns),
                                          static_cast<double>(g.max_amplitude_ns));
    {
      db::Transaction tx(recorder_->store_database());
      store_injected_phase(db::PhaseKind::kAdaptive, l, a, m.training_amplitude_ns,
                           out_.period_ns / std::max<std::int64_t>(w, 1), ra, rec_a,
                           out_.period_ns);
      tx.commit();
    }

    // Active phase: N bins of the square wave, measured again (up to
    // g.repeats times) while it was much noisier than the training, and the
    // attempts combined by inverse variance.
    std::vector<ActiveAttempt> attempts;
    for (;;) {
      attempts.push_back(active_attempt(l, m, index, count, attempts.size() + 1));
      const double ratio = attempts.back().worst_noise_ratio;
      if (ratio <= g.repeat_noise_ratio || attempts.size() > g.repeats) break;
      note(l.label + ": the active phase was " + format_ratio(ratio) +
           "x as noisy as the training; measuring it again");
      // The progress line's "time left" had no room for it: one more phase
      // and its warm-up (budget_ns stays the up-front estimate).
      deadline_ += static_cast<std::int64_t>(g.bins) * out_.bin_width_ns + spec_.workload.warmup_ns;
    }
    for (const ActiveAttempt& a : attempts) {
      for (const std::string& w : a.noise_warnings) {
        out_.warnings.push_back(attempts.size() > 1
                                    ? w + " (active phase " + std::to_string(a.number) + " of " +
                                          std::to_string(attempts.size()) + ")"
                                    : w);
      }
    }
    const ActiveAttempt& last = attempts.back();
    m.delta_l_ns = last.delta_l_ns;
    m.delta_l_measured = last.delta_l_measured;
    for (std::size_t t = 0; t < out_.types.size(); ++t) {
      std::vector<analysis::GradientEstimate> estimates;
      for (const ActiveAttempt& a : attempts) estimates.push_back(a.gradients[t].estimate);
      TypeGradient tg = last.gradients[t];
      tg.estimate = combine_estimates(estimates);
      if (attempts.size() > 1) {
        // Each phase's own estimate next to the combination, so a user can
        // see whether the phases agreed.
        std::string phases;
        for (const analysis::GradientEstimate& e : estimates) {
          phases += (phases.empty() ? "" : ", ") + common::format_number(e.value, 3) + " ± " +
                    common::format_number(e.standard_error, 2);
        }
        note(l.label + " " + tg.type + ": phases " + phases + " -> " +
             common::format_number(tg.estimate.value, 3) + " ± " +
             common::format_number(tg.estimate.standard_error, 2) + " (value ± standard error)");
        // Amplitude, perturbation and throughput change: weighted like the
        // gradient, so they describe the same measurement.
        double weights = 0, amplitude = 0, perturbation = 0, throughput = 0;
        for (const ActiveAttempt& a : attempts) {
          const TypeGradient& x = a.gradients[t];
          const double se = x.estimate.standard_error;
          const double w = se > 0 ? 1.0 / (se * se) : 0.0;
          weights += w;
          amplitude += w * x.actual_amplitude_ns;
          perturbation += w * x.perturbation_ns;
          throughput += w * x.throughput_change;
          tg.reliable = tg.reliable && x.reliable;
        }
        if (weights > 0) {
          tg.actual_amplitude_ns = amplitude / weights;
          tg.perturbation_ns = perturbation / weights;
          tg.throughput_change = throughput / weights;
        }
      }
      m.gradients.push_back(std::move(tg));
    }
    // One gradient row per type, on the last active phase; every attempt's
    // phase, injection and samples are stored under their own phase rows.
    db::Transaction tx(recorder_->store_database());
    for (const TypeGradient& tg : m.gradients) {
      db::Gradient row;
      row.link_id = l.link_id;
      row.type_id = recorder_->type_id(tg.type);
      row.phase_id = last.phase_id;
      row.value = tg.estimate.value;
      row.ci_low = tg.estimate.ci_low;
      row.ci_high = tg.estimate.ci_high;
      row.confidence = g.confidence;
      if (std::isfinite(tg.estimate.time_domain_value)) {
        row.time_domain = tg.estimate.time_domain_value;
      }
      row.actual_amplitude_ns = tg.actual_amplitude_ns;
      row.perturbation_ns = tg.perturbation_ns;
      row.throughput_change = tg.throughput_change;
      row.k_d = kd_.k_d;
      row.bins = static_cast<std::int64_t>(g.bins);
      recorder_->add_gradient(row);
    }
    tx.commit();
    out_.measurements.push_back(std::move(m));
  }

  struct ActiveAttempt {
    std::size_t number = 1;
    std::int64_t phase_id = 0;
    double delta_l_ns = 0;
    bool delta_l_measured = true;
    std::vector<TypeGradient> gradients;  // one per type, this phase alone
    double worst_noise_ratio = 0;         // max over types of sigma / training sigma
    std::vector<std::string> noise_warnings;
  };

  // One active phase at m.amplitude_ns: injects, bins each type, estimates
  // the gradients (phase from the type with the highest SNR) and stores the
  // phase with its injection and samples.
  ActiveAttempt active_attempt(const CampaignLink& l, const LinkMeasurement& m, std::size_t index,
                               std::size_t count, std::size_t number) {
    const GradientSpec& g = spec_.gradient;
    const std::int64_t w = out_.bin_width_ns;
    const std::int64_t window = static_cast<std::int64_t>(g.bins) * w;
    set_phase("active", index, count, g.bins, 0);
    ActiveAttempt out;
    out.number = number;
    Injected act;
    const std::int64_t tail = std::min<std::int64_t>(2 * w, 200'000'000);
    const loadgen::EngineResult rr = inject_phase(l, m.amplitude_ns, 0, window, tail, act);
    out.delta_l_ns = act.delta_l_ns;
    out.delta_l_measured = act.measured;
    if (!act.measured) {
      out_.warnings.push_back(l.label +
                              ": the injector saw no packet in a half-cycle; the "
                              "requested amplitude is used as delta-l");
    }
    const auto records = to_records(rr);
    const std::int64_t start = act.anchor_ns;
    if (rr.errors.total() > 0) {
      out_.warnings.push_back(l.label + ": " + std::to_string(rr.errors.total()) +
                              " requests failed during the active phase (not in the samples)");
    }
    analysis::GradientOptions go;
    go.confidence = g.confidence;
    std::vector<analysis::BinnedSeries> series;
    std::vector<analysis::GradientEstimate> first;
    for (std::size_t t = 0; t < out_.types.size(); ++t) {
      const auto mine = of_type(records, static_cast<std::int32_t>(t));
      try {
        series.push_back(analysis::bin_latencies(mine, start, w, g.bins));
      } catch (const std::invalid_argument&) {
        throw std::runtime_error(l.label + ": no " + out_.types[t] +
                                 " request completed during the active phase");
      }
      first.push_back(analysis::estimate_gradient_with_baseline_spectrum(
          series.back().mean_latency_ns, trainings_[t].fft0_mean, kd_.k_d, out.delta_l_ns, go));
    }
    std::optional<std::size_t> best;
    for (std::size_t t = 0; t < first.size(); ++t) {
      if (first[t].detected && (!best || first[t].snr > first[*best].snr)) best = t;
    }
    go.phase_bins = best ? first[*best].phase_bins : 0.0;
    // The amplitude was sized for the training's noise; say so when the
    // active phase was much noisier (a busy machine), since the CI widens.
    for (std::size_t t = 0; t < first.size(); ++t) {
      const double trained = trainings_[t].fft0_sigma.at(static_cast<std::size_t>(kd_.k_d));
      if (trained <= 0) continue;
      const double ratio = first[t].noise_sigma / trained;
      out.worst_noise_ratio = std::max(out.worst_noise_ratio, ratio);
      if (ratio > 2.0) {
        out.noise_warnings.push_back(l.label + " " + out_.types[t] +
                                     ": noise during the active phase " + format_ratio(ratio) +
                                     "x the training's; the CI is wider than planned");
      }
    }
    for (std::size_t t = 0; t < out_.types.size(); ++t) {
      TypeGradient tg;
      tg.type = out_.types[t];
      tg.estimate = analysis::estimate_gradient_with_baseline_spectrum(
          series[t].mean_latency_ns, trainings_[t].fft0_mean, kd_.k_d, out.delta_l_ns, go);
      tg.actual_amplitude_ns = out.delta_l_ns;
      tg.reliable = series[t].reliable;
      const WindowStats ws =
          window_stats(records, static_cast<std::int32_t>(t), start, start + window);
      tg.perturbation_ns = ws.mean_latency_ns - out_.training_mean_ns[t];
      const double ratio =
          completion_ratio(records, static_cast<std::int32_t>(t), start, start + window);
      tg.throughput_change =
          out_.training_completion[t] > 0 ? ratio / out_.training_completion[t] - 1.0 : 0.0;
      if (auto it = spec_.truth.find(l.label); it != spec_.truth.end()) {
        if (auto jt = it->second.find(tg.type); jt != it->second.end()) tg.truth = jt->second;
      }
      if (!tg.reliable) {
        out_.warnings.push_back(l.label + " " + tg.type + ": " +
                                std::to_string(series[t].filled_bins) +
                                " empty bins; the gradient may be low");
      }
      out.gradients.push_back(std::move(tg));
    }
    db::Transaction tx(recorder_->store_database());
    out.phase_id = store_injected_phase(db::PhaseKind::kActive, l, act, m.amplitude_ns,
                                        static_cast<std::int64_t>(g.bins), rr, records, window);
    tx.commit();
    return out;
  }

  const CampaignSpec& spec_;
  const CampaignOptions& options_;
  CampaignOutcome& out_;
  std::mt19937_64 rng_;
  std::optional<CampaignRecorder> recorder_;
  std::optional<DaemonSet> daemons_;
  std::optional<LeaseKeeper> leases_;
  std::vector<analysis::TrainingResult> trainings_;
  KdChoice kd_;
  CampaignProgress progress_;
  std::int64_t phase_start_ = 0;
  std::int64_t deadline_ = 0;
  std::int64_t last_report_ = 0;
};

}  // namespace

CampaignOutcome run_campaign(const CampaignSpec& spec, db::Store& store,
                             const CampaignOptions& options) {
  CampaignOutcome out;
  if (spec.seed) {
    out.seed = *spec.seed;
  } else {
    std::random_device rd;
    out.seed = ((static_cast<std::uint64_t>(rd()) << 32) | rd()) >> 1;  // < 2^63 for SQLite
  }
  Campaign campaign(spec, store, options, out);
  try {
    campaign.run();
    out.complete = true;
    std::optional<std::string> warnings;
    if (!out.warnings.empty()) {
      std::string all;
      for (const std::string& w : out.warnings) all += (all.empty() ? "" : "; ") + w;
      warnings = all;
    }
    campaign.recorder().finish(db::RunStatus::kComplete, warnings);
  } catch (const std::exception& e) {
    out.complete = false;
    out.error = e.what();
    try {
      campaign.recorder().finish(db::RunStatus::kFailed, out.error);
    } catch (const std::exception& f) {
      out.error += std::string(" (and the run could not be marked failed: ") + f.what() + ")";
    }
  }
  return out;
}

}  // namespace nabla::campaign
