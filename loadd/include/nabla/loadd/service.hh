#pragma once
// nabla-loadd's rounds: one at a time, each run by a worker thread of its
// own, owned by the `owner` that started it and kept alive by its lease.
// Time is an input (the clock given, and expire(now)) and the round's body
// is one too, so the policy is tested without engines or sleeps.
//
// Policy (docs/protocol.md, "nabla-loadd"):
//   start   refused while another round runs (busy), and while another
//           owner's finished round is kept within its lease; a finished
//           round of the same owner, or one whose lease ran out, is
//           replaced. The target must be inside --allow-target, the rate,
//           threads, connections and duration within the limits, and the
//           samples a recording round expects (rate x duration) within
//           --max-samples, so that they fit in memory.
//           A latency or symmetric round is measured with kernel socket
//           timestamps (software_rx_timestamps), a latency round with busy
//           polling too (--busy-poll-us), as lancet's agents are.
//   status, result, samples (by the owner) renew the lease.
//   expire  a running round not polled for its lease is stopped (its stop
//           flag) and marked lapsed; it stays readable one more lease, then
//           is freed. A finished round not polled for its lease is freed.
//   stop    sets the stop flag and frees the round at once (its thread is
//           joined later, by expire or the next start).
// Every time in a round's result is relative to its start_ns (the first
// intended send on this agent's clock), so the coordinator can shift it
// onto its own clock without comparing two machines' clocks.
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "nabla/common/ip_address.hh"
#include "nabla/loadd/protocol.hh"
#include "nabla/loadgen/controller_checks.hh"
#include "nabla/loadgen/engine.hh"
#include "nabla/loadgen/rounds.hh"

namespace nabla::loadd {

// An address block of --allow-target: "10.0.0.0/8", "fd00::/64", or one
// address (its full length).
struct Cidr {
  common::IpAddress network;
  int prefix = 0;
  bool contains(const common::IpAddress& address) const;
  std::string to_string() const;
  // Throws std::invalid_argument naming the text.
  static Cidr parse(const std::string& text);
};

struct Limits {
  std::vector<Cidr> allow_target;  // empty: any
  double max_rate = 2'000'000;
  int max_connections = 4096;
  int max_threads = 16;
  int64_t max_round_ns = 60'000'000'000;
  // The samples a round that records them may expect (offered rate x
  // duration, or max_requests when fewer): every one is held in memory until
  // fetched. 20 million: about 2 GB at ~100 bytes a sample at the peak.
  uint64_t max_samples = 20'000'000;
};

// What a round's body hands back: the engine's result and the agent's own
// calibration check against its share.
struct RoundReport {
  loadgen::EngineResult result;
  loadgen::CalibrationCheck check;
};

// Runs one round: the engine (config.stop set by the service) from start_ns
// on the agent's clock. nabla-loadd's is run_round below.
using RoundBody = std::function<RoundReport(const loadgen::EngineConfig&, int64_t start_ns)>;

// run_engine, then check_calibration with the default limits.
RoundReport run_round(const loadgen::EngineConfig& config, int64_t start_ns);

// A request the agent refuses for what it is doing (busy, not the owner,
// unknown round): the RPC layer answers it with -32004
// (common::rpc_code::kConflict), the connection kept.
class Refused : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct StartRequest {
  std::string owner;
  int64_t lease_ns = 5'000'000'000;
  int64_t lead_ns = 0;
  loadgen::AgentKind kind = loadgen::AgentKind::kSymmetric;
  loadgen::EngineConfig engine;
};

struct RoundStatus {
  std::string id;
  std::string owner;
  protocol::RoundState state = protocol::RoundState::kRunning;
  std::string error;
  int64_t lease_remaining_ns = 0;
};

// A finished round's result, times relative to start_ns.
struct RoundResult {
  std::string id;
  protocol::RoundState state = protocol::RoundState::kDone;
  int64_t start_ns = 0;
  std::shared_ptr<const RoundReport> report;
};

struct ServiceOptions {
  Limits limits;
  std::vector<int> cpus;  // --cpus: every round's load threads run there
  // --busy-poll-us: SO_BUSY_POLL on a latency round's connections (0: off).
  int busy_poll_us = 50;
};

// The engine a round of this kind runs here: the request's, with this
// host's settings (cpus; kernel timestamps for latency and symmetric
// rounds, which record samples; busy polling for latency rounds).
loadgen::EngineConfig local_engine(loadgen::EngineConfig engine, loadgen::AgentKind kind,
                                   const ServiceOptions& options);

class LoadService {
 public:
  LoadService(ServiceOptions options, RoundBody body, std::function<int64_t()> clock);
  ~LoadService();  // stops and joins every round
  LoadService(const LoadService&) = delete;
  LoadService& operator=(const LoadService&) = delete;

  // Checks the limits (std::invalid_argument naming the engine's field) and
  // the one-round policy (Refused), then starts the round's thread; its
  // first intended send is at clock() + lead_ns.
  protocol::LoadStartResult start(StartRequest request);
  // These three renew the lease; Refused for an unknown round or another
  // owner's.
  RoundStatus status(const std::string& id, const std::string& owner);
  // Refused while the round still runs, or when it failed (no result).
  RoundResult result(const std::string& id, const std::string& owner);
  protocol::LoadStopResult stop(const std::string& id, const std::string& owner);
  // The lease policy at `now` (called every ~50 ms by the daemon); also
  // joins the threads of rounds that are gone. Returns the ids lapsed now.
  std::vector<std::string> expire(int64_t now_ns);
  // Stops every round and joins their threads (shutdown).
  void stop_all();

  bool busy() const;
  // The kept round's id and owner, if any.
  std::optional<std::pair<std::string, std::string>> current() const;
  const Limits& limits() const { return options_.limits; }

 private:
  struct Round;
  Round& find(const std::string& id, const std::string& owner);  // mu_ held
  void check_limits(const loadgen::EngineConfig& engine, loadgen::AgentKind kind) const;
  void reap(bool wait);  // mu_ held for the list swap only

  ServiceOptions options_;
  RoundBody body_;
  std::function<int64_t()> clock_;
  mutable std::mutex mu_;
  std::shared_ptr<Round> current_;
  std::vector<std::shared_ptr<Round>> retiring_;
  uint64_t next_id_ = 1;
};

}  // namespace nabla::loadd
