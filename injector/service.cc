#include "nabla/injector/service.hh"

#include <sys/socket.h>
#include <unistd.h>

#include <cmath>
#include <set>
#include <stdexcept>
#include <system_error>

#include "nabla/common/log.hh"
#include "nabla/common/netns.hh"
#include "nabla/common/node_facts.hh"
#include "nabla/common/protocol/injectd.hh"
#include "nabla/common/protocol/no_params.hh"
#include "nabla/common/rpc.hh"
#include "nabla/injector/injection_params.hh"

namespace nabla::injector {

using nlohmann::json;
namespace protocol = common::protocol;

namespace {

int64_t seconds_to_ns(double s) {
  return static_cast<int64_t>(std::llround(s * 1e9));
}

double to_us(int64_t ns) {
  return static_cast<double>(ns) / 1e3;
}

// daemon.info's "timer": how releases are timed and what that costs.
protocol::InjectorInfo::Timer timer_info(const TimerReport& r) {
  const auto& l = r.lateness;
  protocol::InjectorInfo::Timer t;
  t.self_calibrated = r.self_calibrated;
  t.lead_us = to_us(r.lead_ns);
  t.wakeup_lateness = {to_us(l.p50_ns), to_us(l.p90_ns), to_us(l.p99_ns),
                       to_us(l.max_ns), l.samples,       l.recorded};
  t.polled_s = static_cast<double>(r.polled_ns) / 1e9;
  t.polled_fraction =
      r.uptime_ns > 0 ? static_cast<double>(r.polled_ns) / static_cast<double>(r.uptime_ns) : 0.0;
  return t;
}

protocol::QueueStats queue_stats(const QueueView& view, uint64_t loop_wakeups) {
  protocol::QueueStats q;
  q.held = view.held;
  q.queue_maxlen = view.queue_maxlen;
  q.id_gaps = view.queue.id_gaps;
  q.batch_verdicts = view.queue.batch_verdicts_sent;
  q.verdicts = view.queue.verdicts_sent;
  // Packets whose delay counted from the kernel's queue stamp rather than
  // from our receive call (QueuedPacket::queued_ns).
  q.kernel_stamped = view.queue.kernel_stamped;
  // Profiling: syscalls per packet and wake-ups of the (shared) loop.
  q.receive_calls = view.queue.receive_calls;
  q.verdict_sends = view.queue.sends;
  q.verdict_send_ns = view.queue.send_ns;
  q.loop_wakeups = loop_wakeups;
  return q;
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

InjectorService::Active& InjectorService::find(const std::string& id) {
  auto found = active_.find(id);
  if (found == active_.end()) throw std::invalid_argument("id: no active injection '" + id + "'");
  return found->second;
}

protocol::InjectionDescription InjectorService::describe(const Active& a, int64_t now_ns) const {
  protocol::InjectionDescription d;
  d.id = a.id;
  d.link = common::to_string(a.config.link);
  d.direction = a.config.direction;
  d.queue_num = a.queue_num;
  d.seed = a.config.seed;
  d.delay = wave_of(a.config.delay);
  d.lease_s = static_cast<double>(a.lease_ns) / 1e9;
  d.lease_remaining_s = static_cast<double>(a.expires_ns - now_ns) / 1e9;
  d.running_s = static_cast<double>(now_ns - a.started_ns) / 1e9;
  d.owner = owner_text(a.owner);
  d.release = a.config.release;
  return d;
}

std::vector<LiveLink> InjectorService::live_links_locked() const {
  std::vector<LiveLink> live;
  for (const auto& [id, a] : active_) {
    live.push_back(LiveLink{id, a.config.link, a.config.direction, a.owner});
  }
  return live;
}

namespace {

// An injection names a namespace only to make sure it lands there: the
// daemon injects in one namespace (its --netns), and refuses any other.
void check_namespace(const std::optional<std::string>& requested, const std::string& ours) {
  if (!requested) return;
  common::NetnsId id;
  try {
    id = common::netns_id(common::netns_path(*requested));
  } catch (const std::exception& e) {
    throw std::invalid_argument("netns: " + std::string(e.what()));
  }
  if (id == common::current_netns_id()) return;
  throw std::invalid_argument("netns: this nabla-injectd injects in " + ours + ", not in '" +
                              *requested + "'; start one there with --netns " + *requested);
}

// The duplicate fault re-sends copies through a raw socket, which needs
// CAP_NET_RAW: refused here, naming it, rather than counting copies that
// are never sent.
void require_duplicates(DelayEngine& engine, const InjectionConfig& config) {
  if (!config.duplicate) return;
  const bool v6 = config.link.src.address.is_v6();
  try {
    engine.open_duplicate_socket(v6 ? AF_INET6 : AF_INET);
  } catch (const std::system_error& e) {
    throw std::invalid_argument(
        "faults.duplicate: this nabla-injectd cannot re-send copies: its raw socket needs "
        "CAP_NET_RAW (" +
        e.code().message() +
        "); give the daemon CAP_NET_RAW (the unit does, docs/deploy.md) or leave out duplicate");
  }
}

}  // namespace

json InjectorService::start(const json& params, const common::RpcCaller& caller) {
  std::lock_guard lock(mutex_);
  const auto request = protocol::InjectStartParams::from_json(params);
  check_namespace(request.netns, options_.netns_description);
  InjectionConfig config = injection_config(request, seed_source_());
  const double lease_s = request.settings.lease_s.value_or(kDefaultLeaseS);
  check_no_overlap(config.link, config.direction, live_links_locked());
  require_duplicates(engine_, config);
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
  // The rule first: until the queue is bound, --queue-bypass lets the link's
  // packets by undelayed. So the waves start when the queue takes packets,
  // not before an iptables command that may take a second on a busy machine
  // (during which a wave anchored earlier would run on no packet).
  a.rule = rules_.install(RuleSpec{config.link, config.direction, a.queue_num, a.id});
  const int64_t now = clock_();
  config.anchor_at(now);
  a.config = config;
  a.started_ns = now;
  a.lease_ns = seconds_to_ns(lease_s);
  a.expires_ns = now + a.lease_ns;
  a.owner = owner_of(caller, request.owner);

  NfQueueConfig qc;
  qc.queue_num = a.queue_num;
  qc.queue_maxlen = options_.queue_maxlen;
  qc.copy_range = config.needs_payload() ? 0xffff : 128;
  qc.kernel_stamps = config.direction != Direction::kOut;
  try {
    auto queue = std::make_unique<NfQueue>(qc);
    a.slot = engine_.add(std::move(queue), std::make_unique<InjectionPipeline>(config));
  } catch (...) {
    a.rule.reset();
    throw;
  }
  hold_cpu_latency_locked();  // never throws; held while any injection is active
  common::log_info("started ", a.id, " on ", common::to_string(config.link), " (",
                   to_string(config.direction), ", queue ", a.queue_num, ", seed ", config.seed,
                   ", ", owner_text(a.owner), ")");
  json result = describe(a, now).to_json();
  active_.emplace(a.id, std::move(a));
  return result;
}

namespace {

// Logs a change made to another caller's injection with force.
void log_forced(const std::string& id, const Owner& owner, const Owner& caller, const char* verb) {
  if (owner == caller) return;
  common::log_info(id, " of ", owner_text(owner), ": ", verb, " by ", owner_text(caller),
                   " with force");
}

}  // namespace

json InjectorService::update(const json& params, const common::RpcCaller& caller) {
  std::lock_guard lock(mutex_);
  const auto request = protocol::InjectUpdateParams::from_json(params);
  Active& a = find(request.id);
  const Owner who = owner_of(caller, request.owner);
  check_may_change(a.id, a.owner, who, request.force, "update");
  InjectionConfig config = injection_config(request, a.config);
  const double lease_s = request.settings.lease_s.value_or(static_cast<double>(a.lease_ns) / 1e9);
  const int64_t now = clock_();
  config.anchor_at(now);
  if (config.needs_payload() && !a.config.needs_payload()) {
    throw std::invalid_argument(
        "faults: corrupt/duplicate need whole packets; stop and start the injection to add them");
  }
  if (!a.config.duplicate) require_duplicates(engine_, config);
  engine_.with_slot(a.slot, [&](InjectionPipeline& p, const QueueView&) { p.update(config); });
  log_forced(a.id, a.owner, who, "updated");
  a.config = config;
  a.lease_ns = seconds_to_ns(lease_s);
  a.expires_ns = now + a.lease_ns;
  return describe(a, now).to_json();
}

json InjectorService::stop_locked(const std::string& id, const char* reason) {
  auto it = active_.find(id);
  Active a = std::move(it->second);
  active_.erase(it);
  a.rule.reset();  // no new packets reach the queue
  DelayEngine::Detached d = engine_.remove(a.slot);
  protocol::InjectStopResult result{describe(a, clock_()), std::nullopt};
  if (d.pipeline) result.stats = injection_stats(d.pipeline->accounting(), false);
  common::log_info("stopped ", id, " (", reason, ")");
  if (active_.empty() && cpu_latency_) {
    cpu_latency_.reset();
    common::log_info("CPU latency limit released (no injection active)");
  }
  return result.to_json();  // d.queue unbinds here
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

json InjectorService::stop(const json& params, const common::RpcCaller& caller) {
  std::lock_guard lock(mutex_);
  const auto request = protocol::InjectStopParams::from_json(params);
  const Active& a = find(request.id);
  const Owner who = owner_of(caller, request.owner);
  check_may_change(a.id, a.owner, who, request.force, "stop");
  log_forced(a.id, a.owner, who, "stopped");
  const std::string id = a.id;
  return stop_locked(id, "inject.stop");
}

json InjectorService::list(const json& params) {
  protocol::require_no_params(params, protocol::InjectListParams::kMethod);
  std::lock_guard lock(mutex_);
  protocol::InjectListResult out;
  const int64_t now = clock_();
  for (const auto& [id, a] : active_) out.injections.push_back(describe(a, now));
  return out.to_json();
}

json InjectorService::stats(const json& params) {
  const auto request = protocol::InjectStatsParams::from_json(params);
  std::lock_guard lock(mutex_);
  Active& a = find(request.id);
  protocol::InjectStatsResult out{describe(a, clock_()), {}, {}, {}};
  engine_.with_slot(a.slot, [&](InjectionPipeline& p, const QueueView& view) {
    out.stats = injection_stats(p.accounting(), request.cycles);
    out.queue = queue_stats(view, engine_.loop_wakeups());
    // The kernel's view: with fail-open, queue-full and delivery failures pass
    // packets undelayed and are invisible here; without it they are counted.
    const KernelQueueCounters k = read_kernel_queue_counters(a.queue_num);
    if (k.found) {
      out.kernel =
          protocol::KernelQueueStats{k.queue_total, k.queue_dropped, k.user_dropped, k.id_sequence};
    }
  });
  return out.to_json();
}

json InjectorService::renew(const json& params, const common::RpcCaller& caller) {
  const auto request = protocol::LeaseRenewParams::from_json(params);
  std::lock_guard lock(mutex_);
  Active& a = find(request.id);
  const Owner who = owner_of(caller, request.owner);
  check_may_change(a.id, a.owner, who, request.force, "renew");
  log_forced(a.id, a.owner, who, "renewed");
  if (request.lease_s) a.lease_ns = seconds_to_ns(*request.lease_s);
  const int64_t now = clock_();
  a.expires_ns = now + a.lease_ns;
  return protocol::LeaseRenewResult{a.id, static_cast<double>(a.lease_ns) / 1e9}.to_json();
}

json InjectorService::info(const json& params) {
  protocol::require_no_params(params, protocol::DaemonInfoParams::kMethod);
  std::lock_guard lock(mutex_);
  protocol::InjectorInfo info;
  info.version = options_.version;
  info.pid = ::getpid();
  info.queue_base = options_.queue_base;
  info.queue_maxlen = options_.queue_maxlen;
  info.max_injections = options_.max_injections;
  info.timer = timer_info(engine_.timer_report());
  info.busy_poll_us = options_.busy_poll_ns / 1000;
  info.cpu_latency = {options_.cpu_latency_us, cpu_latency_ != nullptr, cpu_latency_error_};
  info.injections = active_.size();
  info.uptime_s = static_cast<double>(clock_() - started_ns_) / 1e9;
  info.node = options_.node;
  if (control_counters_) info.control = control_counters_();
  return info.to_json();
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
  control_counters_ = [&server] { return common::control_counters(server); };
  using Caller = common::RpcCaller;
  server.add_method_with_caller(protocol::InjectStartParams::kMethod,
                                [this](const json& p, const Caller& c) { return start(p, c); });
  server.add_method_with_caller(protocol::InjectUpdateParams::kMethod,
                                [this](const json& p, const Caller& c) { return update(p, c); });
  server.add_method_with_caller(protocol::InjectStopParams::kMethod,
                                [this](const json& p, const Caller& c) { return stop(p, c); });
  server.add_method(protocol::InjectListParams::kMethod, [this](const json& p) { return list(p); });
  server.add_method(protocol::InjectStatsParams::kMethod,
                    [this](const json& p) { return stats(p); });
  server.add_method_with_caller(protocol::LeaseRenewParams::kMethod,
                                [this](const json& p, const Caller& c) { return renew(p, c); });
  server.add_method(protocol::DaemonInfoParams::kMethod, [this](const json& p) { return info(p); });
  common::add_clock_method(server);
}

}  // namespace nabla::injector
