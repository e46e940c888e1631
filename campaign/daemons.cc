// The production Daemons over common::RpcClient; see daemons.hh.
#include "nabla/campaign/daemons.hh"

#include <stdexcept>

#include "nabla/common/log.hh"

namespace nabla::campaign {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;

constexpr milliseconds kStopTimeout{1000};  // best-effort stops on the way out

std::optional<common::Key> key_for(const CampaignSpec& spec, const CampaignNode& node) {
  const auto path = spec.key_file_for(node);
  if (!path) return std::nullopt;
  try {
    return common::load_key_file(*path);
  } catch (const std::exception& e) {
    throw std::runtime_error("node " + node.name + ": key file " + *path + ": " + e.what());
  }
}

common::RpcClient connect_daemon(const CampaignNode& node, const char* what,
                                 const common::HostPort& at, const std::optional<common::Key>& key,
                                 milliseconds timeout) {
  try {
    return common::RpcClient::connect(at.host, at.port, key, timeout);
  } catch (const std::exception& e) {
    throw std::runtime_error("node " + node.name + ": cannot reach " + what + " at " +
                             at.to_string() + ": " + e.what());
  }
}

// ------------------------------------------------------------- messages

json flows_list_params(std::uint64_t cursor) {
  return json{{"since", cursor}, {"min_messages", 1}, {"include_control", false}};
}

FlowsPage flows_list_answer(const json& answer) {
  FlowsPage page;
  for (const json& f : answer.at("flows")) page.flows.push_back(parse_flow(f));
  page.cursor = answer.at("cursor").get<std::uint64_t>();
  return page;
}

json inject_start_params(const InjectionRequest& r) {
  return json{{"link", r.link_spec},
              {"direction", "out"},
              {"delay", square_wave_json(r.amplitude_ns, r.period_ns, r.cycles)},
              {"lease_s", static_cast<double>(r.lease_ns) / 1e9},
              {"seed", r.seed}};
}

json injection_id_params(const std::string& id) {
  return json{{"id", id}};
}

HalfStats half_stats(const json& stats, const char* half) {
  const json& h = stats.at("halves").at(half);
  return HalfStats{h.value("count", std::size_t{0}),
                   h["mean"].is_number() ? h["mean"].get<double>() : 0.0};
}

std::optional<double> optional_number(const json& object, const char* key) {
  return object.contains(key) && object[key].is_number()
             ? std::optional<double>(object[key].get<double>())
             : std::nullopt;
}

// The "stats" object of an inject.stop answer.
InjectionStats inject_stop_answer(const json& answer) {
  const json stats = answer.value("stats", json::object());
  InjectionStats s;
  s.packets = stats.value("packets", std::int64_t{0});
  s.bytes = stats.value("bytes", std::int64_t{0});
  s.delayed = stats.value("delayed", std::int64_t{0});
  s.dropped = stats.value("dropped", std::int64_t{0});
  s.high = half_stats(stats, "high");
  s.low = half_stats(stats, "low");
  if (stats.contains("actual_delay_ns")) {
    const json& a = stats["actual_delay_ns"];
    s.actual_std_ns = optional_number(a, "std");
    s.actual_p50_ns = optional_number(a, "p50");
    s.actual_p99_ns = optional_number(a, "p99");
    s.actual_max_ns = optional_number(a, "max");
  }
  return s;
}

}  // namespace

json square_wave_json(std::int64_t amplitude_ns, std::int64_t period_ns, int cycles) {
  return json{{"kind", "square"},
              {"amplitude", amplitude_ns},
              {"period", period_ns},
              {"duty", 0.5},
              {"cycles", cycles}};
}

RpcDaemons::RpcDaemons(const CampaignSpec& spec, milliseconds timeout) : timeout_(timeout) {
  for (const CampaignNode& n : spec.nodes) {
    Entry e;
    e.node = &n;
    e.key = key_for(spec, n);
    if (n.injectd)
      e.injectd.emplace(connect_daemon(n, "nabla-injectd", *n.injectd, e.key, timeout));
    if (n.sniffd) e.sniffd.emplace(connect_daemon(n, "nabla-sniffd", *n.sniffd, e.key, timeout));
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
    e.injectd.emplace(connect_daemon(*e.node, "nabla-injectd", *e.node->injectd, e.key, timeout));
  }
  return *e.injectd;
}

std::optional<FlowsPage> RpcDaemons::list_flows(const std::string& node, std::uint64_t cursor) {
  auto it = nodes_.find(node);
  if (it == nodes_.end() || !it->second.sniffd) return std::nullopt;
  return flows_list_answer(
      it->second.sniffd->call("flows.list", flows_list_params(cursor), timeout_));
}

std::string RpcDaemons::start_injection(const std::string& node, const InjectionRequest& request) {
  const json started =
      injectd(node, timeout_).call("inject.start", inject_start_params(request), timeout_);
  return started.at("id").get<std::string>();
}

InjectionStats RpcDaemons::stop_injection(const std::string& node, const std::string& id) {
  return inject_stop_answer(
      injectd(node, timeout_).call("inject.stop", injection_id_params(id), timeout_));
}

void RpcDaemons::abandon_injection(const std::string& node, const std::string& id) noexcept {
  try {
    injectd(node, kStopTimeout).call("inject.stop", injection_id_params(id), kStopTimeout);
  } catch (const std::exception& e) {
    common::log_warn("could not stop injection ", id, " on node ", node, " (", e.what(),
                     "); the daemon stops it when its lease lapses");
  }
}

void RpcDaemons::renew_lease(const std::string& node, const std::string& id) {
  try {
    injectd(node, timeout_).call("lease.renew", injection_id_params(id), timeout_);
  } catch (const common::RpcError&) {
    throw;  // the daemon refused (e.g. the injection is gone): no retry helps
  } catch (const std::exception&) {
    // A transport error: once more, on a new connection.
    injectd(node, timeout_).call("lease.renew", injection_id_params(id), timeout_);
  }
}

}  // namespace nabla::campaign
