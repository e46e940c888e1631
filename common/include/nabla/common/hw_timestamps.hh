#pragma once
// Hardware packet timestamps: whether a NIC's driver can stamp every packet
// (ETHTOOL_GET_TS_INFO), asked by the load generator before a run and by both
// daemons for daemon.info (docs/protocol.md), and the socket and request the
// interface ioctls share.
#include <net/if.h>

#include <cstdint>
#include <string>
#include <vector>

#include "nabla/common/fd.hh"

namespace nabla::common {

struct HardwareTimestampInfo {
  bool available = false;
  std::string reason;      // why not, when !available
  int32_t phc_index = -1;  // the driver's PTP clock, when available
};

// The driver's answer to ETHTOOL_GET_TS_INFO (struct ethtool_ts_info).
struct DriverTimestampInfo {
  uint32_t so_timestamping = 0;  // SOF_TIMESTAMPING_* capabilities
  int32_t phc_index = -1;        // PTP hardware clock, -1 for none
  uint32_t tx_types = 0;         // bit (1 << HWTSTAMP_TX_*)
  uint32_t rx_filters = 0;       // bit (1 << HWTSTAMP_FILTER_*)
};

// Hardware stamps need RX, TX and raw hardware stamping, a PTP clock, the
// HWTSTAMP_TX_ON type and an RX filter that stamps every packet (ALL; PTP-only
// filters, as on many Intel NICs, cannot stamp RPCs — lancet §2.1).
HardwareTimestampInfo assess_hardware(const DriverTimestampInfo& info,
                                      const std::string& interface);

// Asks the driver of `interface` (ETHTOOL_GET_TS_INFO) and assesses the
// answer. Never throws: failures become reasons.
HardwareTimestampInfo detect_hardware(const std::string& interface);

// One interface of this network namespace with its addresses and what
// detect_hardware says of it.
struct InterfaceTimestamping {
  std::string name;
  std::vector<std::string> addresses;  // IPv4 and IPv6 literals
  HardwareTimestampInfo hardware;
};

// Every interface but loopback that holds an address, in getifaddrs order.
// Never throws: an unreadable interface list is an empty one.
std::vector<InterfaceTimestamping> interface_timestamping();

// An AF_INET datagram socket for interface ioctls. Throws std::system_error.
FileDescriptor interface_control_socket();
// An ifreq naming `interface` with ifr_data = data. Throws
// std::invalid_argument for an empty or too long name.
ifreq interface_request(const std::string& interface, void* data);

}  // namespace nabla::common
