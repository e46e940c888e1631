#include "nabla/injector/daemon.hh"

#include <unistd.h>

#include <asio/io_context.hpp>
#include <chrono>
#include <iostream>
#include <optional>
#include <stdexcept>
#include <thread>

#include "nabla/common/clock.hh"
#include "nabla/common/host_port.hh"
#include "nabla/common/instance_lock.hh"
#include "nabla/common/local_keys.hh"
#include "nabla/common/log.hh"
#include "nabla/common/netns.hh"
#include "nabla/common/node_facts.hh"
#include "nabla/common/periodic_task.hh"
#include "nabla/common/rpc.hh"
#include "nabla/common/stop_signals.hh"
#include "nabla/injector/engine.hh"
#include "nabla/injector/iptables_rules.hh"
#include "nabla/injector/nfqueue.hh"
#include "nabla/injector/service.hh"

namespace nabla::injector {

std::vector<std::string> check_environment(uint16_t queue_num) {
  std::vector<std::string> missing;
  if (::geteuid() != 0) missing.push_back("not running as root (NFQUEUE and iptables need it)");
  for (const char* tool : {"iptables", "ip6tables", "iptables-save"}) {
    if (common::find_program(tool).empty()) {
      missing.push_back(std::string(tool) + " not found in PATH");
    }
  }
  if (missing.empty()) {
    const auto r = common::run_command(
        {"iptables", "-w", "5", "-t", IptablesBackend::table(), "-L", "OUTPUT", "-n"});
    if (r.exit_code != 0) missing.push_back("iptables does not work: " + r.stderr_text);
    try {
      NfQueueConfig config;
      config.queue_num = queue_num;
      NfQueue probe(config);
    } catch (const std::exception& e) {
      missing.push_back(std::string("NFQUEUE unusable (is nfnetlink_queue available?): ") +
                        e.what());
    }
  }
  return missing;
}

namespace {

// daemon.info's node facts: NFQUEUE (what --check finds missing) and what
// every daemon reports.
common::protocol::NodeFacts injector_node_facts(const DaemonOptions& options) {
  const std::vector<std::string> missing = check_environment(options.queue_num);
  common::protocol::FeatureState nfqueue{missing.empty(), ""};
  if (missing.empty()) {
    nfqueue.detail = "queue " + std::to_string(options.queue_num) + " binds; iptables works";
  }
  for (const std::string& m : missing) {
    nfqueue.detail += (nfqueue.detail.empty() ? "" : "; ") + m;
  }
  return common::probe_node_facts(options.report_protocol_version, {{"nfqueue", nfqueue}});
}

}  // namespace

int run_daemon(const DaemonOptions& options) {
  // SIGINT/SIGTERM are taken synchronously by this thread; every thread
  // started below inherits the block. Held first, so the mask comes back
  // only after the rules, the key and the lock are gone.
  common::StopSignals signals(common::StopSignals::Mode::kBlock);
  // A second injectd in the namespace it injects in would remove this one's
  // chains as stale (common/instance_lock.hh).
  const common::InstanceLock lock = common::InstanceLock::acquire(
      common::kInjectdKeyName,
      options.netns ? common::netns_path(*options.netns) : std::string("/proc/self/ns/net"));
  const common::HostPort listen =
      common::parse_listen_address(options.listen, common::kInjectdPort);
  common::RpcServerOptions rpc;
  rpc.listen_address = listen.host;
  rpc.port = listen.port;
  rpc.daemon = common::kInjectdKeyName;
  if (options.advertise) {
    rpc.advertise = common::parse_advertised_address(*options.advertise, listen.port);
  }
  common::DaemonKey key =
      common::DaemonKey::choose(options.key_file, common::kInjectdKeyName, listen.host);
  key.apply(rpc);

  asio::io_context io;
  auto server = std::make_unique<common::RpcServer>(io, rpc);  // listens where started
  key.publish(server->port());  // beside the control socket, before --netns moves the daemon
  ServiceOptions so;
  if (options.netns) {
    common::enter_netns(common::netns_path(*options.netns));
    so.netns_description = "namespace " + *options.netns;
    common::log_info("injecting in namespace ", *options.netns);
  }
  // Least privilege from here on, as under the unit: bound, published and
  // in its namespace, it needs only what NFQUEUE, iptables and the raw
  // socket need. No thread runs yet, so every later one inherits the drop.
  if (options.drop_capabilities) {
    common::log_info("capabilities kept: ",
                     common::describe_kept_capabilities(
                         kept_capabilities(options),
                         common::drop_capabilities_except(kept_capabilities(options))));
  }
  IptablesBackend rules;  // removes stale chains of a crashed run first
  EngineOptions engine_options;
  engine_options.spin_ns = options.spin_ns;
  engine_options.busy_poll_ns = options.busy_poll_ns;
  engine_options.realtime_priority = options.realtime_priority;
  engine_options.max_held_bytes = options.max_held_bytes;
  DelayEngine engine(engine_options);
  engine.start();
  so.queue_base = options.queue_num;
  so.queue_maxlen = options.queue_maxlen;
  so.busy_poll_ns = options.busy_poll_ns;
  so.cpu_latency_us = options.cpu_latency_us;
  so.node = injector_node_facts(options);
  InjectorService service(so, engine, rules, [] { return common::monotonic_ns(); });

  service.register_methods(*server);
  common::log_info("control key: ", key.describe());
  common::log_info("listening on ", listen.host, ":", server->port(), ", queues from ",
                   options.queue_num);
  std::cout << "nabla-injectd listening on " << listen.host << ":" << server->port() << std::endl;
  std::thread control([&io] { io.run(); });

  std::optional<common::PeriodicTask> leases;
  leases.emplace("lease check", std::chrono::milliseconds(100),
                 [&service] { service.expire_leases(common::monotonic_ns()); });

  const int signo = signals.wait();
  common::log_info("signal ", signo, ": stopping every injection and removing rules");
  leases.reset();
  server->stop();
  control.join();
  server.reset();
  service.stop_all();
  engine.stop();
  return 0;  // `rules` removes the chains on the way out
}

int run_cleanup(const DaemonOptions& options, std::ostream& out) {
  const std::string netns =
      options.netns ? common::netns_path(*options.netns) : std::string("/proc/self/ns/net");
  std::optional<common::InstanceLock> lock;
  try {
    lock.emplace(common::InstanceLock::acquire(common::kInjectdKeyName, netns));
  } catch (const common::AlreadyRunningError& e) {
    out << "nabla-injectd --cleanup: removed nothing: " << e.holder() << ", and its chains stay"
        << std::endl;
    return 0;
  }
  if (options.netns) common::enter_netns(netns);
  const int removed = IptablesBackend::remove_stale_chains();
  out << "nabla-injectd --cleanup: "
      << (removed > 0 ? "removed " + std::to_string(removed) +
                            " NABLA chains a nabla-injectd that did not stop cleanly left"
                      : std::string("no NABLA chains left behind"))
      << std::endl;
  return 0;
}

}  // namespace nabla::injector
