#include "nabla/injector/service.hh"

#include <unistd.h>

#include <cmath>
#include <set>
#include <stdexcept>

#include "nabla/common/log.hh"
#include "nabla/common/rpc.hh"
#include "nabla/injector/injection_params.hh"

namespace nabla::injector {

using nlohmann::json;

namespace {

int64_t seconds_to_ns(double s) {
  return static_cast<int64_t>(std::llround(s * 1e9));
}

bool include_cycles(const json& params) {
  auto it = params.find("cycles");
  if (it == params.end() || it->is_null()) return false;
  if (!it->is_boolean()) throw std::invalid_argument("cycles: must be true or false");
  return it->get<bool>();
}

double to_us(int64_t ns) {
  return static_cast<double>(ns) / 1e3;
}

// daemon.info's "timer": how releases are timed and what that costs.
json timer_json(const TimerReport& r) {
  const auto& l = r.lateness;
  return json{{"mode", r.self_calibrated ? "self-calibrated" : "fixed"},
              {"lead_us", to_us(r.lead_ns)},
              {"wakeup_lateness_us",
               {{"p50", to_us(l.p50_ns)},
                {"p90", to_us(l.p90_ns)},
                {"p99", to_us(l.p99_ns)},
                {"max", to_us(l.max_ns)},
                {"samples", l.samples},
                {"recorded", l.recorded}}},
              {"polled_s", static_cast<double>(r.polled_ns) / 1e9},
              {"polled_fraction",
               r.uptime_ns > 0 ? static_cast<double>(r.polled_ns) / static_cast<double>(r.uptime_ns)
                               : 0.0}};
}

}  // namespace

InjectorService::InjectorService(ServiceOptions options, DelayEngine& engine, RuleBackend& rules,
                                 Clock clock)
    : options_(std::move(options)),
      engine_(engine),
      rules_(rules),
      clock_(std::move(clock)),
      seed_source_(std::random_device{}()),
      started_ns_(clock_()) {}

InjectorService::~InjectorService() {
  stop_all();
}

InjectorService::Active& InjectorService::find(const json& params) {
  if (!params.is_object()) throw std::invalid_argument("params: must be an object");
  auto it = params.find("id");
  if (it == params.end() || !it->is_string()) throw std::invalid_argument("id: required, a string");
  auto found = active_.find(it->get<std::string>());
  if (found == active_.end()) {
    throw std::invalid_argument("id: no active injection '" + it->get<std::string>() + "'");
  }
  return found->second;
}

json InjectorService::describe(const Active& a, int64_t now_ns) const {
  return json{{"id", a.id},
              {"link", common::to_string(a.config.link)},
              {"direction", std::string(to_string(a.config.direction))},
              {"queue_num", a.queue_num},
              {"seed", a.config.seed},
              {"delay", to_json(a.config.delay)},
              {"lease_s", static_cast<double>(a.lease_ns) / 1e9},
              {"lease_remaining_s", static_cast<double>(a.expires_ns - now_ns) / 1e9},
              {"running_s", static_cast<double>(now_ns - a.started_ns) / 1e9}};
}

json InjectorService::start(const json& params) {
  std::lock_guard lock(mutex_);
  InjectionConfig config = parse_injection_config(params, nullptr, seed_source_());
  if (params.contains("id")) throw std::invalid_argument("id: not accepted by inject.start");
  const double lease_s = parse_lease_s(params);
  // All validated; from here on the kernel is touched.
  std::set<uint16_t> used;
  for (const auto& [id, a] : active_) used.insert(a.queue_num);
  int k = 0;
  while (k < options_.max_injections && used.count(static_cast<uint16_t>(options_.queue_base + k)))
    ++k;
  if (k == options_.max_injections) {
    throw common::RpcError(
        common::rpc_code::kInvalidRequest,
        "too many injections (max " + std::to_string(options_.max_injections) + ")");
  }
  Active a;
  a.id = "inj-" + std::to_string(next_id_++);
  a.queue_num = static_cast<uint16_t>(options_.queue_base + k);
  const int64_t now = clock_();
  config.anchor_at(now);
  a.config = config;
  a.started_ns = now;
  a.lease_ns = seconds_to_ns(lease_s);
  a.expires_ns = now + a.lease_ns;

  NfQueueConfig qc;
  qc.queue_num = a.queue_num;
  qc.queue_maxlen = options_.queue_maxlen;
  qc.copy_range = config.needs_payload() ? 0xffff : 128;
  qc.kernel_stamps = config.direction != Direction::kOut;
  auto queue = std::make_unique<NfQueue>(qc);
  a.slot = engine_.add(std::move(queue), std::make_unique<InjectionPipeline>(config));
  try {
    a.rule = rules_.install(RuleSpec{config.link, config.direction, a.queue_num, a.id});
  } catch (...) {
    engine_.remove(a.slot);
    throw;
  }
  hold_cpu_latency_locked();  // never throws; held while any injection is active
  common::log_info("started ", a.id, " on ", common::to_string(config.link), " (",
                   to_string(config.direction), ", queue ", a.queue_num, ", seed ", config.seed,
                   ")");
  json result = describe(a, now);
  active_.emplace(a.id, std::move(a));
  return result;
}

json InjectorService::update(const json& params) {
  std::lock_guard lock(mutex_);
  Active& a = find(params);
  InjectionConfig config = parse_injection_config(params, &a.config, a.config.seed);
  const double lease_s =
      params.contains("lease_s") ? parse_lease_s(params) : static_cast<double>(a.lease_ns) / 1e9;
  const int64_t now = clock_();
  config.anchor_at(now);
  if (config.needs_payload() && !a.config.needs_payload()) {
    throw std::invalid_argument(
        "faults: corrupt/duplicate need whole packets; stop and start the injection to add them");
  }
  engine_.with_slot(a.slot, [&](InjectionPipeline& p, const QueueView&) { p.update(config); });
  a.config = config;
  a.lease_ns = seconds_to_ns(lease_s);
  a.expires_ns = now + a.lease_ns;
  return describe(a, now);
}

json InjectorService::stop_locked(const std::string& id, const char* reason) {
  auto it = active_.find(id);
  Active a = std::move(it->second);
  active_.erase(it);
  a.rule.reset();  // no new packets reach the queue
  DelayEngine::Detached d = engine_.remove(a.slot);
  json result = describe(a, clock_());
  if (d.pipeline) {
    result["stats"] = stats_json(d.pipeline->accounting(), false);
    result["stats"]["seed"] = a.config.seed;
  }
  common::log_info("stopped ", id, " (", reason, ")");
  if (active_.empty() && cpu_latency_) {
    cpu_latency_.reset();
    common::log_info("CPU latency limit released (no injection active)");
  }
  return result;  // d.queue unbinds here
}

void InjectorService::hold_cpu_latency_locked() {
  if (!options_.cpu_latency_us || cpu_latency_) return;
  auto request = std::make_unique<common::CpuLatencyRequest>(*options_.cpu_latency_us,
                                                             options_.cpu_latency_device);
  if (request->held()) {
    cpu_latency_ = std::move(request);
    cpu_latency_error_.clear();
    common::log_info("holding a ", *options_.cpu_latency_us,
                     " us CPU latency limit while injections run");
    return;
  }
  // Injection goes on without it; warn once per distinct failure.
  if (request->error() != cpu_latency_error_) {
    common::log_warn(
        "CPU latency limit not held (release times may wait for idle CPUs to "
        "wake): ",
        request->error());
  }
  cpu_latency_error_ = request->error();
}

json InjectorService::stop(const json& params) {
  std::lock_guard lock(mutex_);
  const std::string id = find(params).id;
  return stop_locked(id, "inject.stop");
}

json InjectorService::list(const json&) {
  std::lock_guard lock(mutex_);
  json out = json::array();
  const int64_t now = clock_();
  for (const auto& [id, a] : active_) out.push_back(describe(a, now));
  return json{{"injections", out}};
}

json InjectorService::stats(const json& params) {
  std::lock_guard lock(mutex_);
  Active& a = find(params);
  const bool cycles = include_cycles(params);
  json out = describe(a, clock_());
  engine_.with_slot(a.slot, [&](InjectionPipeline& p, const QueueView& view) {
    json s = stats_json(p.accounting(), cycles);
    s["held"] = view.held;
    s["queue_maxlen"] = view.queue_maxlen;
    s["id_gaps"] = view.queue.id_gaps;
    s["batch_verdicts"] = view.queue.batch_verdicts_sent;
    s["verdicts"] = view.queue.verdicts_sent;
    // Packets whose delay counted from the kernel's queue stamp rather than
    // from our receive call (QueuedPacket::queued_ns).
    s["kernel_stamped"] = view.queue.kernel_stamped;
    // Profiling: syscalls per packet and wake-ups of the (shared) loop.
    s["receive_calls"] = view.queue.receive_calls;
    s["verdict_sends"] = view.queue.sends;
    s["verdict_send_ns"] = view.queue.send_ns;
    s["loop_wakeups"] = engine_.loop_wakeups();
    // The kernel's view: with fail-open, queue-full and delivery failures pass
    // packets undelayed and are invisible here; without it they are counted.
    const KernelQueueCounters k = read_kernel_queue_counters(a.queue_num);
    if (k.found) {
      s["kernel"] = {{"queue_total", k.queue_total},
                     {"queue_dropped", k.queue_dropped},
                     {"user_dropped", k.user_dropped},
                     {"id_sequence", k.id_sequence}};
    }
    out.update(s);
  });
  return out;
}

json InjectorService::renew(const json& params) {
  std::lock_guard lock(mutex_);
  Active& a = find(params);
  if (params.contains("lease_s")) a.lease_ns = seconds_to_ns(parse_lease_s(params));
  const int64_t now = clock_();
  a.expires_ns = now + a.lease_ns;
  return json{{"id", a.id}, {"lease_remaining_s", static_cast<double>(a.lease_ns) / 1e9}};
}

json InjectorService::info(const json&) {
  std::lock_guard lock(mutex_);
  return json{{"name", "nabla-injectd"},
              {"version", options_.version},
              {"pid", ::getpid()},
              {"queue_base", options_.queue_base},
              {"queue_maxlen", options_.queue_maxlen},
              {"max_injections", options_.max_injections},
              {"timer", timer_json(engine_.timer_report())},
              {"busy_poll_us", options_.busy_poll_ns / 1000},
              {"cpu_latency",
               {{"limit_us", options_.cpu_latency_us ? json(*options_.cpu_latency_us) : json()},
                {"held", cpu_latency_ != nullptr},
                {"error", cpu_latency_error_}}},
              {"injections", active_.size()},
              {"uptime_s", static_cast<double>(clock_() - started_ns_) / 1e9}};
}

std::vector<std::string> InjectorService::expire_leases(int64_t now_ns) {
  std::lock_guard lock(mutex_);
  std::vector<std::string> lapsed;
  for (const auto& [id, a] : active_) {
    if (a.expires_ns <= now_ns) lapsed.push_back(id);
  }
  for (const auto& id : lapsed) stop_locked(id, "lease lapsed");
  return lapsed;
}

void InjectorService::stop_all() noexcept {
  try {
    std::lock_guard lock(mutex_);
    std::vector<std::string> ids;
    for (const auto& [id, a] : active_) ids.push_back(id);
    for (const auto& id : ids) stop_locked(id, "shutdown");
  } catch (const std::exception& e) {
    common::log_error("stopping injections: ", e.what());
  }
}

void InjectorService::register_methods(common::RpcServer& server) {
  server.add_method("inject.start", [this](const json& p) { return start(p); });
  server.add_method("inject.update", [this](const json& p) { return update(p); });
  server.add_method("inject.stop", [this](const json& p) { return stop(p); });
  server.add_method("inject.list", [this](const json& p) { return list(p); });
  server.add_method("inject.stats", [this](const json& p) { return stats(p); });
  server.add_method("lease.renew", [this](const json& p) { return renew(p); });
  server.add_method("daemon.info", [this](const json& p) { return info(p); });
}

}  // namespace nabla::injector
