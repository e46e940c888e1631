#pragma once
// What the sniffer knows about one socket after a sock_diag dump, and the
// local ephemeral port range used to fold client ports to 0 (link-gradient
// paper §3: a link must not split into one record per connection).
#include <cstdint>
#include <string_view>

namespace nabla::sniffer {

enum class Proto : uint8_t { kTcp = 6, kUdp = 17 };

// TCP states as sock_diag reports them (include/net/tcp_states.h).
inline constexpr uint8_t kTcpEstablished = 1;
inline constexpr uint8_t kTcpTimeWait = 6;
inline constexpr uint8_t kTcpListen = 10;

// An IPv4 or IPv6 address; IPv4 kept in the first 4 bytes.
struct IpAddr {
  uint8_t family = 0;  // AF_INET or AF_INET6
  uint8_t bytes[16] = {};
  bool operator==(const IpAddr&) const = default;
  // Writes the numeric form ("10.0.0.1", "::1") into buf; returns its length.
  size_t format(char* buf, size_t len) const;
};

// local/remote 5-tuple as seen from this node (ports in host order).
struct FlowKey {
  Proto proto = Proto::kTcp;
  IpAddr local;
  uint16_t local_port = 0;
  IpAddr remote;
  uint16_t remote_port = 0;
  bool operator==(const FlowKey&) const = default;
};

// Kernel tcp_info counters the sniffer uses (zero for UDP).
struct TcpCounters {
  uint32_t segs_in = 0;
  uint32_t segs_out = 0;
  uint32_t data_segs_in = 0;
  uint32_t data_segs_out = 0;
  uint64_t bytes_acked = 0;     // bytes we sent that the peer acked, +1 for the SYN (RFC 4898)
  uint64_t bytes_received = 0;  // bytes we received
  // Payload bytes sent, retransmissions included, and those retransmitted
  // (Linux 4.19+; has_bytes_sent says whether the kernel reported them).
  // Their difference counts each payload byte once, with no SYN or FIN byte.
  bool has_bytes_sent = false;
  uint64_t bytes_sent = 0;
  uint64_t bytes_retrans = 0;
};

struct SocketRecord {
  FlowKey key;
  uint8_t state = 0;  // TCP_ESTABLISHED, TCP_LISTEN, ... (linux/tcp.h numbering)
  uint32_t uid = 0;
  uint64_t inode = 0;
  uint64_t cookie = 0;     // kernel socket cookie: unique per socket lifetime
  uint64_t cgroup_id = 0;  // cgroup v2 id of the socket's creator (Linux 5.7+), 0 when absent
  bool has_tcp_info = false;
  TcpCounters tcp;
};

// The local port range (net.ipv4.ip_local_port_range), inclusive.
struct PortRange {
  uint16_t low = 32768;
  uint16_t high = 60999;
  bool contains(uint16_t port) const { return port >= low && port <= high; }
  // Ephemeral ports fold to 0; service ports stay.
  uint16_t fold(uint16_t port) const { return contains(port) ? 0 : port; }

  // Parses the file's text, "32768\t60999\n". Throws std::invalid_argument.
  static PortRange parse(std::string_view text);
  // Reads /proc/sys/net/ipv4/ip_local_port_range (of the caller's netns).
  static PortRange read_system();
};

}  // namespace nabla::sniffer
