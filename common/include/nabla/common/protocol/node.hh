#pragma once
// What both daemons report of their node, and the clock method both serve;
// read by `nabla nodes check` (docs/cli.md) to decide whether a node can
// serve a campaign. The conventions are those of protocol/injectd.hh; the
// fields are documented in docs/protocol.md.
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "nabla/common/protocol/no_params.hh"

namespace nabla::common::protocol {

// A kernel feature as the daemon found it: usable or not, and what it saw.
struct FeatureState {
  bool available = false;
  std::string detail;  // why not, or how it is used
  bool operator==(const FeatureState&) const = default;
};

// One interface of the daemon's network namespace: its addresses and whether
// its driver stamps every packet in hardware (ETHTOOL_GET_TS_INFO).
struct InterfaceStamps {
  std::string name;
  std::vector<std::string> addresses;
  bool hardware = false;
  std::string detail;  // why not, or the PTP clock
  bool operator==(const InterfaceStamps&) const = default;
};

// The part of daemon.info both daemons share: "protocol_version",
// "features" (name -> {available, detail}) and "hw_timestamps".
struct NodeFacts {
  int64_t protocol_version = 0;
  std::map<std::string, FeatureState> features;
  std::vector<InterfaceStamps> hw_timestamps;
  bool operator==(const NodeFacts&) const = default;

  // Adds the three keys to a daemon.info result object.
  void write_to(nlohmann::json& result) const;
  // Reads them from a daemon.info result; errors name the field.
  static NodeFacts read_from(const nlohmann::json& result);
};

// daemon.info's "control": what the control server refused or closed on its
// own since the daemon started (common::RpcServerCounters). Absent from an
// older daemon's answer: all zero.
struct ControlCounters {
  uint64_t refused_full = 0;      // 128 connections were open
  uint64_t refused_per_peer = 0;  // its peer held 8 unauthenticated connections
  uint64_t auth_timeouts = 0;     // no authentication within 3 s
  uint64_t idle_closed = 0;       // idle for the idle timeout
  bool operator==(const ControlCounters&) const = default;

  // Adds "control" to a daemon.info result object.
  void write_to(nlohmann::json& result) const;
  static ControlCounters read_from(const nlohmann::json& result);
};

// daemon.info's params (none). Each daemon answers its own result
// (InjectorInfo, SnifferInfo), so a client that may ask either reads JSON.
struct DaemonInfoParams : NoParams {
  static constexpr const char* kMethod = "daemon.info";
};

struct ClockNowResult;

// clock.now's params (none).
struct ClockNowParams : NoParams {
  static constexpr const char* kMethod = "clock.now";
  using Result = ClockNowResult;
};

// clock.now's result: the daemon's clocks when it handled the request.
// `nabla nodes check` estimates the offset to the coordinator's
// CLOCK_REALTIME from several of these, NTP-style.
struct ClockNowResult {
  static constexpr const char* kMethod = ClockNowParams::kMethod;
  int64_t realtime_ns = 0;   // CLOCK_REALTIME
  int64_t monotonic_ns = 0;  // CLOCK_MONOTONIC, the clock of flows' and injections' times
  bool operator==(const ClockNowResult&) const = default;

  nlohmann::json to_json() const;
  static ClockNowResult from_json(const nlohmann::json& result);
};

}  // namespace nabla::common::protocol
