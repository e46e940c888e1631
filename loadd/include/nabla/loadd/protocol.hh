#pragma once
// The messages of nabla-loadd's control methods (docs/protocol.md,
// "nabla-loadd"): one struct per method's params and result, each with the
// one to_json and from_json both ends use (the daemon, loadd/control.cc; the
// coordinator's AgentPool, loadd/agents.cc).
//
// Conventions are those of common/protocol/injectd.hh: unknown fields are
// refused, and every error is one std::invalid_argument whose message starts
// with the field's name ("lease_s: must be within (0, 3600]"), which the RPC
// server answers as -32602. The workload itself travels as the JSON of
// loadgen/wire.hh (engine_config_to_json), checked by the daemon.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "nabla/loadgen/rounds.hh"

namespace nabla::loadd::protocol {

inline constexpr double kDefaultLeaseS = 5.0;
inline constexpr double kMaxLeaseS = 3600.0;
inline constexpr int64_t kMaxLeadNs = 60'000'000'000;  // 60 s
inline constexpr uint64_t kMaxSamplesPage = 8192;
inline constexpr std::size_t kMaxOwnerChars = 64;

// What a round is doing. running: its engine runs (or waits for its start);
// done: it ran to its end; failed: the engine threw (error says what);
// stopped: load.stop; lapsed: nobody polled it for its lease.
enum class RoundState { kRunning, kDone, kFailed, kStopped, kLapsed };
std::string_view to_string(RoundState state) noexcept;
// Throws std::invalid_argument naming `path` for anything else.
RoundState parse_round_state(std::string_view text, const std::string& path = "state");

struct LoadStartResult;
struct LoadStatusResult;
struct LoadResultResult;
struct LoadSamplesResult;
struct LoadStopResult;

// load.start: run one round of this agent's share.
struct LoadStartParams {
  static constexpr const char* kMethod = "load.start";
  using Result = LoadStartResult;
  std::string owner;  // 1..64 printable characters: who loads
  double lease_s = kDefaultLeaseS;
  int64_t lead_ns = 0;  // the first intended send this long after the agent reads the request
  loadgen::AgentKind kind = loadgen::AgentKind::kSymmetric;
  nlohmann::json engine = nlohmann::json::object();  // loadgen::engine_config_to_json

  nlohmann::json to_json() const;
  static LoadStartParams from_json(const nlohmann::json& params);
};

// The params of load.status, load.result and load.stop: which round, whose.
struct RoundRef {
  std::string id;
  std::string owner;
  bool operator==(const RoundRef&) const = default;
  nlohmann::json to_json() const;
  static RoundRef from_json(const nlohmann::json& params);
};

struct LoadStatusParams : RoundRef {
  static constexpr const char* kMethod = "load.status";
  using Result = LoadStatusResult;
  static LoadStatusParams from_json(const nlohmann::json& params) {
    return {RoundRef::from_json(params)};
  }
};

struct LoadResultParams : RoundRef {
  static constexpr const char* kMethod = "load.result";
  using Result = LoadResultResult;
  static LoadResultParams from_json(const nlohmann::json& params) {
    return {RoundRef::from_json(params)};
  }
};

struct LoadStopParams : RoundRef {
  static constexpr const char* kMethod = "load.stop";
  using Result = LoadStopResult;
  static LoadStopParams from_json(const nlohmann::json& params) {
    return {RoundRef::from_json(params)};
  }
};

struct LoadSamplesParams {
  static constexpr const char* kMethod = "load.samples";
  using Result = LoadSamplesResult;
  std::string id;
  std::string owner;
  uint64_t offset = 0;
  uint64_t limit = kMaxSamplesPage;  // 1 .. 8192
  bool operator==(const LoadSamplesParams&) const = default;

  nlohmann::json to_json() const;
  static LoadSamplesParams from_json(const nlohmann::json& params);
};

struct LoadStartResult {
  std::string id;
  // The round's start (its first intended send before any setup shift) on
  // the agent's monotonic clock.
  int64_t start_ns = 0;
  bool operator==(const LoadStartResult&) const = default;
  nlohmann::json to_json() const;
  static LoadStartResult from_json(const nlohmann::json& result);
};

struct LoadStatusResult {
  std::string id;
  RoundState state = RoundState::kRunning;
  std::string error;  // failed: why; "" otherwise (absent on the wire)
  double lease_remaining_s = 0;
  bool operator==(const LoadStatusResult&) const = default;
  nlohmann::json to_json() const;
  static LoadStatusResult from_json(const nlohmann::json& result);
};

// load.result: the round without its samples. Every time in `summary`
// (first_intended_ns, last_intended_ns) and in the samples pages is relative
// to start_ns, the round's start on the agent's clock.
struct LoadResultResult {
  std::string id;
  RoundState state = RoundState::kDone;
  int64_t start_ns = 0;
  uint64_t samples = 0;                               // how many load.samples pages hold
  nlohmann::json summary = nlohmann::json::object();  // loadgen::round_summary_to_json
  nlohmann::json to_json() const;
  static LoadResultResult from_json(const nlohmann::json& result);
};

struct LoadSamplesResult {
  std::string id;
  uint64_t offset = 0;
  uint64_t total = 0;
  nlohmann::json samples = nlohmann::json::object();  // loadgen::samples_to_json
  nlohmann::json to_json() const;
  static LoadSamplesResult from_json(const nlohmann::json& result);
};

struct LoadStopResult {
  std::string id;
  RoundState state = RoundState::kStopped;  // what it was when stopped (done stays done)
  bool operator==(const LoadStopResult&) const = default;
  nlohmann::json to_json() const;
  static LoadStopResult from_json(const nlohmann::json& result);
};

// daemon.info of nabla-loadd.
struct LoaddInfo {
  std::string name = "nabla-loadd";
  std::string kind = "loadd";
  std::string version;
  int64_t protocol_version = 0;  // common::kProtocolVersion of its build
  int64_t pid = 0;
  bool busy = false;    // a round is running
  std::string round;    // its id, or the finished round still kept; "" for none
  std::string owner;    // of that round
  double max_rate = 0;  // --max-rate
  int64_t max_connections = 0;
  int64_t max_threads = 0;  // --max-threads
  double max_round_s = 0;
  int64_t max_samples = 0;                // --max-samples
  std::vector<std::string> allow_target;  // --allow-target; empty: any
  double uptime_s = 0;
  nlohmann::json to_json() const;
  static LoaddInfo from_json(const nlohmann::json& result);
};

}  // namespace nabla::loadd::protocol
