#pragma once
// nabla-loadd: a load agent. Serves load.* (service.hh) and daemon.info over
// the authenticated control protocol (common/rpc.hh, kind "loadd"), runs
// each round in a worker thread, checks leases every 50 ms, stops on
// SIGINT/SIGTERM. Needs no privilege.
#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "nabla/common/rpc.hh"
#include "nabla/loadd/service.hh"

namespace nabla::loadd {

struct DaemonOptions {
  std::string listen = "127.0.0.1:7313";
  // The address clients connect to when it is not `listen` (NAT, a port
  // forward): ADDR[:PORT], common::parse_advertised_address.
  std::optional<std::string> advertise;
  std::optional<std::string> key_file;
  ServiceOptions service;
};

// Registers load.start, load.status, load.result, load.samples, load.stop
// and daemon.info on `server` for `service`. The JSON of the engine, the
// summary and the samples is loadgen/wire.hh's.
void register_methods(common::RpcServer& server, LoadService& service, int64_t started_ns);
// What register_methods registers: each method's name and handler.
std::vector<std::pair<std::string, common::RpcServer::Handler>> method_handlers(
    LoadService& service, int64_t started_ns);

// Runs until SIGINT or SIGTERM; setup errors throw. Prints
// "nabla-loadd listening on HOST port N" on stdout once serving. Once its
// control socket is bound and its key read, before any thread starts, it
// drops every capability (common::drop_capabilities_except with none kept:
// no_new_privs, empty bounding, ambient, inheritable, permitted and
// effective sets), so root started with --allow-root keeps uid 0 only.
int run_daemon(const DaemonOptions& options);

// Why an agent with this effective uid may not run, or nullopt: root is
// refused without allow_root (--allow-root). The agent needs no privilege,
// and as root an exploit of it, or a round's CA path, would reach anything.
std::optional<std::string> root_refusal(uid_t euid, bool allow_root);

// "0,2-3" -> {0, 2, 3}; throws std::invalid_argument naming the text.
std::vector<int> parse_cpu_list(const std::string& text);

}  // namespace nabla::loadd
