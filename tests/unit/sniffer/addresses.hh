#pragma once
// Addresses and the port range the sniffer's unit tests build records with.
#include <sys/socket.h>

#include <cstdint>

#include "nabla/sniffer/socket_record.hh"

namespace nabla::sniffer::testing {

inline IpAddr v4(uint8_t a, uint8_t b, uint8_t c, uint8_t d) {
  IpAddr ip;
  ip.family = AF_INET;
  ip.bytes[0] = a;
  ip.bytes[1] = b;
  ip.bytes[2] = c;
  ip.bytes[3] = d;
  return ip;
}

// Linux's default ephemeral range.
inline constexpr PortRange kRange{32768, 60999};

}  // namespace nabla::sniffer::testing
