// The production Daemons over common::RpcClient; see daemons.hh.
#include "nabla/campaign/daemons.hh"

#include <algorithm>
#include <stdexcept>
#include <string_view>

#include "nabla/common/local_keys.hh"
#include "nabla/common/log.hh"
#include "nabla/common/protocol/injectd.hh"
#include "nabla/common/protocol/sniffd.hh"
#include "nabla/common/rpc_auth.hh"

namespace nabla::campaign {
namespace {

namespace protocol = common::protocol;
using nlohmann::json;
using std::chrono::milliseconds;

constexpr milliseconds kStopTimeout{1000};  // best-effort stops on the way out

// The key for the node's daemon at `at` when the campaign names a key file
// or a key directory (then that daemon's HOST.key, local_keys.hh).
std::optional<common::Key> key_for(const CampaignSpec& spec, const CampaignNode& node,
                                   const std::optional<common::HostPort>& at) {
  const auto path = spec.key_file_for(node);
  if (!path || !at) return std::nullopt;
  try {
    return common::load_node_key(*path, at->host);
  } catch (const std::exception& e) {
    throw std::runtime_error("node " + node.name + ": key file " + *path + ": " + e.what());
  }
}

// The node's key file when the campaign names one, else the client defaults
// of local_keys.hh ($NABLA_KEY_FILE, the daemon's run file on loopback,
// /etc/nabla/keys/HOST.key, /etc/nabla/key), looked up only if the daemon asks for a key.
common::RpcClient connect_daemon(const CampaignNode& node, const char* what,
                                 const common::HostPort& at, const std::optional<common::Key>& key,
                                 milliseconds timeout) {
  const char* key_name =
      std::string_view(what) == "nabla-injectd" ? common::kInjectdKeyName : common::kSniffdKeyName;
  common::RpcClient::KeySource source =
      key ? common::RpcClient::KeySource([key] { return *key; })
          : common::client_key_source(std::nullopt, key_name, at.host, at.port);
  try {
    return common::RpcClient::connect(at.host, at.port, source, timeout, key_name);
  } catch (const std::exception& e) {
    throw std::runtime_error("node " + node.name + ": cannot reach " + what + " at " +
                             at.to_string() + ": " + e.what());
  }
}

// ------------------------------------------------------------- messages
// Every message is the common/protocol struct both daemons parse with.

protocol::Wave square_wave(std::int64_t amplitude_ns, std::int64_t period_ns, int cycles) {
  return protocol::Wave::square(amplitude_ns, period_ns, 0.5, cycles);
}

// A listing in pages is read whole; a daemon still paging after this many
// is not one to trust.
constexpr int kMaxFlowsPages = 10'000;

protocol::InjectStartParams inject_start_params(const InjectionRequest& r,
                                                const std::string& owner) {
  protocol::InjectStartParams p;
  p.owner = owner;
  p.link = r.link_spec;
  p.direction = protocol::Direction::kOut;
  if (r.fault) {
    p.settings.delay = r.fault->delay;
    p.settings.faults = r.fault->faults;
  } else {
    p.settings.delay = square_wave(r.amplitude_ns, r.period_ns, r.cycles);
    // The gradient divides by the measured step, so a release need not be
    // on time; polling only while the wave is high would take CPU from the
    // service in step with the wave (docs/timing.md).
    p.release = protocol::Release::kSleep;
  }
  p.settings.lease_s = static_cast<double>(r.lease_ns) / 1e9;
  p.settings.seed = r.seed;
  p.netns = r.netns;
  return p;
}

protocol::LeaseRenewParams lease_renew_params(const std::string& id, const std::string& owner) {
  return protocol::LeaseRenewParams{id, std::nullopt, owner};
}

protocol::InjectStopParams inject_stop_params(const std::string& id, const std::string& owner) {
  return protocol::InjectStopParams{id, owner};
}

// This run's session token: its injections belong to it (and the node's
// key), across reconnections, and to no other run.
std::string new_session_token() {
  const auto bytes = common::random_nonce();
  return "run-" + common::to_hex(bytes.data(), 8);
}

HalfStats half_stats(const protocol::DelaySummary& half) {
  return HalfStats{static_cast<std::size_t>(half.count), half.count > 0 ? half.mean_ns : 0.0};
}

// The "stats" of an inject.stop answer; all zero when the daemon had none.
InjectionStats inject_stop_answer(const protocol::InjectStopResult& result) {
  InjectionStats s;
  if (!result.stats) return s;
  const protocol::InjectionStats& stats = *result.stats;
  s.packets = static_cast<std::int64_t>(stats.counters.packets);
  s.bytes = static_cast<std::int64_t>(stats.counters.bytes);
  s.delayed = static_cast<std::int64_t>(stats.counters.delayed);
  s.dropped = static_cast<std::int64_t>(stats.counters.dropped);
  s.high = half_stats(stats.high);
  s.low = half_stats(stats.low);
  if (stats.actual_delay.count > 0) {
    s.actual_std_ns = stats.actual_delay.std_ns;
    s.actual_p50_ns = static_cast<double>(stats.actual_delay.p50_ns);
    s.actual_p99_ns = static_cast<double>(stats.actual_delay.p99_ns);
    s.actual_max_ns = static_cast<double>(stats.actual_delay.max_ns);
  }
  return s;
}

}  // namespace

json square_wave_json(std::int64_t amplitude_ns, std::int64_t period_ns, int cycles) {
  return square_wave(amplitude_ns, period_ns, cycles).to_json();
}

RpcDaemons::RpcDaemons(const CampaignSpec& spec, milliseconds timeout)
    : timeout_(timeout),
      rule_change_timeout_(std::max(timeout, kRuleChangeTimeout)),
      session_(new_session_token()) {
  for (const CampaignNode& n : spec.nodes) {
    Entry e;
    e.node = &n;
    e.injectd_key = key_for(spec, n, n.injectd);
    e.sniffd_key = key_for(spec, n, n.sniffd);
    if (n.injectd)
      e.injectd.emplace(connect_daemon(n, "nabla-injectd", *n.injectd, e.injectd_key, timeout));
    if (n.sniffd)
      e.sniffd.emplace(connect_daemon(n, "nabla-sniffd", *n.sniffd, e.sniffd_key, timeout));
    nodes_.emplace(n.name, std::move(e));
  }
}

common::RpcClient& RpcDaemons::injectd(const std::string& node, milliseconds timeout) {
  auto it = nodes_.find(node);
  if (it == nodes_.end() || !it->second.injectd) {
    throw std::runtime_error("node " + node + ": no injectd");
  }
  Entry& e = it->second;
  if (!e.injectd->connected()) {
    e.injectd.reset();
    e.injectd.emplace(
        connect_daemon(*e.node, "nabla-injectd", *e.node->injectd, e.injectd_key, timeout));
  }
  return *e.injectd;
}

std::optional<FlowsPage> RpcDaemons::list_flows(const std::string& node, std::uint64_t cursor) {
  auto it = nodes_.find(node);
  if (it == nodes_.end() || !it->second.sniffd) return std::nullopt;
  Entry& e = it->second;
  if (!e.sniffd->connected()) {  // e.g. closed by the daemon's idle timeout
    e.sniffd.reset();
    e.sniffd.emplace(
        connect_daemon(*e.node, "nabla-sniffd", *e.node->sniffd, e.sniffd_key, timeout_));
  }
  // Every page of the listing (a busy node answers in pages, protocol.md).
  protocol::FlowsListParams params{cursor, 1, false};
  FlowsPage all;
  for (int page = 1;; ++page) {
    const protocol::FlowsListResult result = e.sniffd->call(params, timeout_);
    for (const protocol::Flow& f : result.flows) all.flows.push_back(flow_end_of(f));
    all.cursor = result.cursor;
    if (!result.more) return all;
    if (page >= kMaxFlowsPages) {
      throw std::runtime_error("node " + node + ": flows.list still paging after " +
                               std::to_string(kMaxFlowsPages) + " pages");
    }
    params = protocol::next_flows_page(params, result);
  }
}

std::string RpcDaemons::start_injection(const std::string& node, const InjectionRequest& request) {
  return injectd(node, timeout_)
      .call(inject_start_params(request, session_), rule_change_timeout_)
      .id;
}

InjectionStats RpcDaemons::stop_injection(const std::string& node, const std::string& id) {
  return inject_stop_answer(
      injectd(node, timeout_).call(inject_stop_params(id, session_), rule_change_timeout_));
}

void RpcDaemons::abandon_injection(const std::string& node, const std::string& id) noexcept {
  try {
    injectd(node, kStopTimeout).call(inject_stop_params(id, session_), kStopTimeout);
  } catch (const std::exception& e) {
    common::log_warn("could not stop injection ", id, " on node ", node, " (", e.what(),
                     "); the daemon stops it when its lease lapses");
  }
}

void RpcDaemons::renew_lease(const std::string& node, const std::string& id) {
  try {
    injectd(node, timeout_).call(lease_renew_params(id, session_), timeout_);
  } catch (const common::RpcError&) {
    throw;  // the daemon refused (e.g. the injection is gone): no retry helps
  } catch (const std::exception&) {
    // A transport error: once more, on a new connection.
    injectd(node, timeout_).call(lease_renew_params(id, session_), timeout_);
  }
}

}  // namespace nabla::campaign
