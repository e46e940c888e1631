#pragma once
// The messages of nabla-sniffd's control methods, used by the daemon in
// sniffer/ and by every client (nabla discover, campaigns); the conventions
// are those of protocol/injectd.hh. Fields are documented in docs/protocol.md.
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "nabla/common/protocol/node.hh"

namespace nabla::common::protocol {

inline constexpr uint64_t kMaxMinMessages = 1'000'000'000;
// A flows.list page token is the daemon's own text, at most this long.
inline constexpr std::size_t kMaxPageTokenBytes = 1024;

struct FlowsListResult;

struct FlowsListParams {
  static constexpr const char* kMethod = "flows.list";
  using Result = FlowsListResult;
  uint64_t since = 0;                    // cursor: only flows changed after it
  std::optional<uint64_t> min_messages;  // absent: the daemon's --min-messages
  bool include_control = false;          // also nabla's own control connections
  // The page after this token (FlowsListResult::next of the previous answer
  // to the same since, min_messages and include_control); absent: the first.
  std::optional<std::string> after = std::nullopt;
  bool operator==(const FlowsListParams&) const = default;

  nlohmann::json to_json() const;
  // Null params are the defaults.
  static FlowsListParams from_json(const nlohmann::json& params);
};

enum class FlowProto : uint8_t { kTcp, kUdp };
std::string_view to_string(FlowProto proto) noexcept;

// How the reporting node found the local process of a flow: its own socket,
// the listener on its address and port (an accepted socket already gone),
// another socket of the same tuple, among the processes of the socket's
// cgroup ("cgroup"), or not at all: "gone-before-scan" when the process had
// left before any scan or lookup found it (the socket's cgroup is carried),
// "none" otherwise.
enum class FlowOwner : uint8_t { kNone, kSocket, kListener, kTuple, kCgroup, kGone };
std::string_view to_string(FlowOwner owner) noexcept;

// Who opened the flow, seen from the reporting node.
enum class FlowDirection : uint8_t { kOutbound, kInbound, kUnknown };
std::string_view to_string(FlowDirection direction) noexcept;

struct FlowCounts {
  uint64_t segments_out = 0;  // data segments (TCP) or datagrams (UDP)
  uint64_t segments_in = 0;
  uint64_t bytes_out = 0;
  uint64_t bytes_in = 0;
  bool operator==(const FlowCounts&) const = default;
};

// The network namespace a flow was seen in. `own`: the sniffer's own (the
// node's), carried with its inode only; another namespace has its name
// under /run/netns and the short id of the container it belongs to, when
// known.
struct FlowNetns {
  uint64_t inode = 0;
  std::string name;
  std::string container;
  bool own = true;
  bool operator==(const FlowNetns&) const = default;
};

// One flow record of flows.list, ports already folded (ephemeral → 0).
struct Flow {
  FlowProto proto = FlowProto::kTcp;
  std::string local_addr;
  uint16_t local_port = 0;
  int32_t pid = 0;  // 0 when the owner is unknown
  std::string comm;
  std::string cgroup;      // the owner's cgroup v2 path ("" unknown)
  uint64_t cgroup_id = 0;  // the socket's cgroup id from sock_diag (0 unknown)
  FlowOwner owner = FlowOwner::kNone;
  std::string remote_addr;
  uint16_t remote_port = 0;
  FlowDirection direction = FlowDirection::kUnknown;
  bool control = false;
  FlowCounts total;     // since first seen
  FlowCounts interval;  // the last scan's deltas
  uint32_t sockets = 0;
  uint32_t conntrack_events = 0;
  uint32_t closed_sockets = 0;  // sockets of the flow reported by destroy notifications
  int64_t first_seen_ns = 0;    // the daemon's monotonic clock
  int64_t last_seen_ns = 0;
  FlowNetns netns = {};
  bool operator==(const Flow&) const = default;

  nlohmann::json to_json() const;
  // Requires what a reader joins flows by (proto, local, remote, total);
  // direction (default unknown), control (false), local.cgroup (""),
  // local.cgroup_id (0), local.owner (none), interval, sockets,
  // conntrack_events, closed_sockets, the times (0) and netns (own, inode
  // 0) are checked when present.
  static Flow from_json(const nlohmann::json& flow, const std::string& path = "");
};

// One page of flows.list: an answer stays far below the frame limit, so a
// busy node answers in pages. While `more`, ask again with after = `next`;
// `cursor` (the same on every page of one listing) is the `since` of the
// listing after the last page.
struct FlowsListResult {
  uint64_t cursor = 0;  // pass back as `since`
  std::vector<Flow> flows;
  bool more = false;      // another page follows: ask with after = next
  std::string next = {};  // the page token, when more
  bool operator==(const FlowsListResult&) const = default;

  nlohmann::json to_json() const;
  static FlowsListResult from_json(const nlohmann::json& result);
};

// The params of the page after `page`, an answer to `first` with `more` set.
FlowsListParams next_flows_page(const FlowsListParams& first, const FlowsListResult& page);

// daemon.info of nabla-sniffd.
struct SnifferInfo {
  static constexpr const char* kMethod = DaemonInfoParams::kMethod;
  struct SockDiag {
    uint64_t messages = 0, malformed = 0, short_tcp_info = 0, errors = 0;
    bool operator==(const SockDiag&) const = default;
  };
  struct Conntrack {
    bool enabled = false;
    uint64_t events = 0, ignored = 0, malformed = 0, lost = 0;
    bool operator==(const Conntrack&) const = default;
  };
  struct Destroy {  // socket-destroy notifications
    bool enabled = false;
    uint64_t notifications = 0, malformed = 0, lost = 0;
    bool operator==(const Destroy&) const = default;
  };
  std::string daemon = "nabla-sniffd";
  std::string version;
  int64_t pid = 0;
  int64_t interval_ns = 0;
  uint64_t min_messages = 0;
  std::vector<uint16_t> control_ports;
  uint16_t port_range_low = 0;  // "port_range": [low, high], the ephemeral ports
  uint16_t port_range_high = 0;
  uint64_t scans = 0;
  uint64_t sockets_last_scan = 0;
  int64_t last_scan_ns = 0;
  uint64_t flows = 0;
  uint64_t max_flows = 0;           // per namespace's table (--max-flows); 0 from an older daemon
  uint64_t flows_refused = 0;       // new flows not recorded because a table was full
  uint64_t namespaces = 1;          // network namespaces scanned, its own included
  uint64_t max_namespaces = 0;      // --max-namespaces; 0 from an older daemon
  uint64_t namespaces_skipped = 0;  // selected but not scanned: max_namespaces reached
  SockDiag sock_diag;
  Conntrack conntrack;
  Destroy destroy;
  NodeFacts node;  // features: "sock_diag", "conntrack", "destroy", "cpu_latency"
  ControlCounters control;
  bool operator==(const SnifferInfo&) const = default;

  nlohmann::json to_json() const;
  static SnifferInfo from_json(const nlohmann::json& result);
};

}  // namespace nabla::common::protocol
