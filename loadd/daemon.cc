// nabla-loadd's control methods and event loop; see daemon.hh.
#include "nabla/loadd/daemon.hh"

#include <unistd.h>

#include <algorithm>
#include <asio/io_context.hpp>
#include <chrono>
#include <iostream>
#include <optional>
#include <span>
#include <stdexcept>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "nabla/common/capabilities.hh"
#include "nabla/common/clock.hh"
#include "nabla/common/host_port.hh"
#include "nabla/common/json_rpc.hh"
#include "nabla/common/local_keys.hh"
#include "nabla/common/log.hh"
#include "nabla/common/periodic_task.hh"
#include "nabla/common/protocol/no_params.hh"
#include "nabla/common/protocol/node.hh"
#include "nabla/common/stop_signals.hh"
#include "nabla/common/version.hh"
#include "nabla/loadd/protocol.hh"
#include "nabla/loadgen/wire.hh"

namespace nabla::loadd {
namespace {

using nlohmann::json;

// The service's refusals as RPC errors; the rest (invalid_argument: -32602)
// as the server answers them.
template <class F>
json refusing(F&& f) {
  try {
    return f();
  } catch (const Refused& e) {
    throw common::RpcError(common::rpc_code::kConflict, e.what());
  }
}

loadgen::EngineConfig engine_of(const json& engine) {
  try {
    return loadgen::engine_config_from_json(engine);
  } catch (const std::invalid_argument& e) {
    const std::string what = e.what();
    // wire.hh names the key from "engine."; say so when it does not.
    if (what.rfind("engine", 0) == 0) throw;
    throw std::invalid_argument("engine: " + what);
  }
}

}  // namespace

std::optional<std::string> root_refusal(uid_t euid, bool allow_root) {
  if (euid != 0 || allow_root) return std::nullopt;
  return "nabla-loadd needs no privilege: run it as an unprivileged user (the package's unit runs "
         "it as nabla-load), or pass --allow-root";
}

std::vector<int> parse_cpu_list(const std::string& text) {
  std::vector<int> cpus;
  const auto bad = [&] {
    throw std::invalid_argument("expected CPU numbers like 0,2-3, got '" + text + "'");
  };
  if (text.empty()) bad();
  std::size_t at = 0;
  while (at <= text.size()) {
    const std::size_t comma = std::min(text.find(',', at), text.size());
    const std::string item = text.substr(at, comma - at);
    const std::size_t dash = item.find('-');
    const auto number = [&](const std::string& s) {
      if (s.empty() || s.size() > 5 || !std::all_of(s.begin(), s.end(), ::isdigit)) bad();
      return std::stoi(s);
    };
    const int lo = number(item.substr(0, dash));
    const int hi = dash == std::string::npos ? lo : number(item.substr(dash + 1));
    if (hi < lo) bad();
    for (int c = lo; c <= hi; ++c) cpus.push_back(c);
    at = comma + 1;
  }
  return cpus;
}

std::vector<std::pair<std::string, common::RpcServer::Handler>> method_handlers(
    LoadService& service, int64_t started_ns) {
  std::vector<std::pair<std::string, common::RpcServer::Handler>> methods;
  const auto add = [&methods](std::string name, common::RpcServer::Handler handler) {
    methods.emplace_back(std::move(name), std::move(handler));
  };
  add(protocol::LoadStartParams::kMethod, [&service](const json& params) {
    const auto p = protocol::LoadStartParams::from_json(params);
    StartRequest request;
    request.owner = p.owner;
    request.lease_ns = static_cast<int64_t>(p.lease_s * 1e9);
    request.lead_ns = p.lead_ns;
    request.kind = p.kind;
    request.engine = engine_of(p.engine);
    return refusing([&] { return service.start(std::move(request)).to_json(); });
  });
  add(protocol::LoadStatusParams::kMethod, [&service](const json& params) {
    const auto p = protocol::LoadStatusParams::from_json(params);
    return refusing([&] {
      const RoundStatus s = service.status(p.id, p.owner);
      return protocol::LoadStatusResult{s.id, s.state, s.error,
                                        static_cast<double>(s.lease_remaining_ns) / 1e9}
          .to_json();
    });
  });
  add(protocol::LoadResultParams::kMethod, [&service](const json& params) {
    const auto p = protocol::LoadResultParams::from_json(params);
    return refusing([&] {
      const RoundResult r = service.result(p.id, p.owner);
      protocol::LoadResultResult out;
      out.id = r.id;
      out.state = r.state;
      out.start_ns = r.start_ns;
      out.samples = r.report->result.samples.size();
      out.summary = loadgen::round_summary_to_json(r.report->result, r.report->check);
      return out.to_json();
    });
  });
  add(protocol::LoadSamplesParams::kMethod, [&service](const json& params) {
    const auto p = protocol::LoadSamplesParams::from_json(params);
    return refusing([&] {
      const RoundResult r = service.result(p.id, p.owner);
      const auto& samples = r.report->result.samples;
      if (p.offset > samples.size()) {
        throw std::invalid_argument("offset: " + std::to_string(p.offset) + " is past the " +
                                    std::to_string(samples.size()) + " samples");
      }
      const std::size_t n = std::min<std::size_t>(p.limit, samples.size() - p.offset);
      protocol::LoadSamplesResult out;
      out.id = r.id;
      out.offset = p.offset;
      out.total = samples.size();
      out.samples = loadgen::samples_to_json(std::span(samples).subspan(p.offset, n));
      return out.to_json();
    });
  });
  add(protocol::LoadStopParams::kMethod, [&service](const json& params) {
    const auto p = protocol::LoadStopParams::from_json(params);
    return refusing([&] { return service.stop(p.id, p.owner).to_json(); });
  });
  add(common::protocol::DaemonInfoParams::kMethod, [&service, started_ns](const json& params) {
    common::protocol::require_no_params(params, common::protocol::DaemonInfoParams::kMethod);
    protocol::LoaddInfo info;
    info.version = common::nabla_version();
    info.protocol_version = common::kProtocolVersion;
    info.pid = ::getpid();
    info.busy = service.busy();
    if (const auto current = service.current()) {
      info.round = current->first;
      info.owner = current->second;
    }
    const Limits& l = service.limits();
    info.max_rate = l.max_rate;
    info.max_connections = l.max_connections;
    info.max_threads = l.max_threads;
    info.max_round_s = static_cast<double>(l.max_round_ns) / 1e9;
    info.max_samples = static_cast<int64_t>(l.max_samples);
    for (const Cidr& c : l.allow_target) info.allow_target.push_back(c.to_string());
    info.uptime_s = static_cast<double>(common::monotonic_ns() - started_ns) / 1e9;
    return info.to_json();
  });
  return methods;
}

void register_methods(common::RpcServer& server, LoadService& service, int64_t started_ns) {
  for (auto& [name, handler] : method_handlers(service, started_ns)) {
    server.add_method(std::move(name), std::move(handler));
  }
}

int run_daemon(const DaemonOptions& options) {
  // SIGINT/SIGTERM are taken by this thread; every thread started below
  // (control, leases, rounds and their load threads) inherits the block.
  common::StopSignals signals(common::StopSignals::Mode::kBlock);
  const int64_t started_ns = common::monotonic_ns();
  const common::HostPort listen = common::parse_listen_address(options.listen, common::kLoaddPort);
  common::RpcServerOptions rpc;
  rpc.listen_address = listen.host;
  rpc.port = listen.port;
  rpc.daemon = common::kLoaddKeyName;
  if (options.advertise) {
    rpc.advertise = common::parse_advertised_address(*options.advertise, listen.port);
  }
  common::DaemonKey key =
      common::DaemonKey::choose(options.key_file, common::kLoaddKeyName, listen.host);
  key.apply(rpc);

  asio::io_context io;
  auto server = std::make_unique<common::RpcServer>(io, rpc);
  try {
    key.publish(server->port());
  } catch (const std::system_error& e) {
    // The usual case of an agent run as a user: no run file for a fresh key.
    throw std::runtime_error(std::string(e.what()) +
                             "; an agent run without root needs --key-file (or a readable "
                             "/etc/nabla/key)");
  }
  // No privilege from here on, whoever started it: under its unit it has
  // none already (a no-op); started as root with --allow-root it gives up
  // every capability for good, bounding set included, before any thread
  // runs (capabilities are per thread), as the unit's empty
  // CapabilityBoundingSet= and NoNewPrivileges=yes would.
  common::log_info("capabilities kept: ",
                   common::describe_kept_capabilities({}, common::drop_capabilities_except({})));
  LoadService service(options.service, run_round, [] { return common::monotonic_ns(); });
  register_methods(*server, service, started_ns);
  common::log_info("control key: ", key.describe());
  common::log_info("listening on ", listen.host, ":", server->port());
  std::cout << "nabla-loadd listening on " << listen.host << " port " << server->port()
            << std::endl;
  std::thread control([&io] { io.run(); });

  std::optional<common::PeriodicTask> leases;
  leases.emplace("lease check", std::chrono::milliseconds(50),
                 [&service] { service.expire(common::monotonic_ns()); });

  const int signo = signals.wait();
  common::log_info("signal ", signo, ": stopping");
  leases.reset();
  server->stop();
  control.join();
  server.reset();
  service.stop_all();
  return 0;
}

}  // namespace nabla::loadd
