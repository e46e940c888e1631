// Hardware timestamping detection (ETHTOOL_GET_TS_INFO); see hw_timestamps.hh.
#include "nabla/common/hw_timestamps.hh"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <linux/ethtool.h>
#include <linux/net_tstamp.h>
#include <linux/sockios.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <system_error>

namespace nabla::common {
namespace {

// The address literal of an AF_INET or AF_INET6 sockaddr; "" for others.
std::string address_text(const sockaddr* addr) {
  char text[INET6_ADDRSTRLEN] = {};
  if (addr->sa_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(addr);
    ::inet_ntop(AF_INET, &in->sin_addr, text, sizeof text);
  } else if (addr->sa_family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(addr);
    ::inet_ntop(AF_INET6, &in6->sin6_addr, text, sizeof text);
  }
  return text;
}

}  // namespace

FileDescriptor interface_control_socket() {
  FileDescriptor fd(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (!fd) throw std::system_error(errno, std::system_category(), "socket(AF_INET, SOCK_DGRAM)");
  return fd;
}

ifreq interface_request(const std::string& interface, void* data) {
  if (interface.empty() || interface.size() >= IFNAMSIZ) {
    throw std::invalid_argument("invalid interface name '" + interface + "'");
  }
  ifreq ifr{};
  std::memcpy(ifr.ifr_name, interface.c_str(), interface.size());
  ifr.ifr_data = static_cast<char*>(data);
  return ifr;
}

HardwareTimestampInfo assess_hardware(const DriverTimestampInfo& info,
                                      const std::string& interface) {
  HardwareTimestampInfo out;
  const unsigned need =
      SOF_TIMESTAMPING_RX_HARDWARE | SOF_TIMESTAMPING_TX_HARDWARE | SOF_TIMESTAMPING_RAW_HARDWARE;
  if ((info.so_timestamping & need) != need) {
    out.reason = interface + ": driver offers no hardware RX/TX timestamps (software only)";
    return out;
  }
  if (info.phc_index < 0) {
    out.reason = interface + ": no PTP hardware clock";
    return out;
  }
  if ((info.tx_types & (1u << HWTSTAMP_TX_ON)) == 0) {
    out.reason = interface + ": driver cannot stamp every transmitted packet (no HWTSTAMP_TX_ON)";
    return out;
  }
  if ((info.rx_filters & (1u << HWTSTAMP_FILTER_ALL)) == 0) {
    out.reason = interface +
                 ": driver stamps only some received packets (no HWTSTAMP_FILTER_ALL; PTP-only "
                 "filters cannot stamp RPC replies)";
    return out;
  }
  out.available = true;
  out.phc_index = info.phc_index;
  return out;
}

HardwareTimestampInfo detect_hardware(const std::string& interface) {
  try {
    auto fd = interface_control_socket();
    ethtool_ts_info ts{};
    ts.cmd = ETHTOOL_GET_TS_INFO;
    ifreq ifr = interface_request(interface, &ts);
    if (::ioctl(fd.get(), SIOCETHTOOL, &ifr) != 0) {
      return {false, "ETHTOOL_GET_TS_INFO on " + interface + ": " + std::strerror(errno)};
    }
    DriverTimestampInfo info;
    info.so_timestamping = ts.so_timestamping;
    info.phc_index = ts.phc_index;
    info.tx_types = ts.tx_types;
    info.rx_filters = ts.rx_filters;
    return assess_hardware(info, interface);
  } catch (const std::exception& e) {
    return {false, e.what()};
  }
}

std::vector<InterfaceTimestamping> interface_timestamping() {
  std::vector<InterfaceTimestamping> out;
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return out;
  for (const ifaddrs* a = list; a != nullptr; a = a->ifa_next) {
    if (a->ifa_addr == nullptr || (a->ifa_flags & IFF_LOOPBACK) != 0) continue;
    const std::string address = address_text(a->ifa_addr);
    if (address.empty()) continue;
    auto it = std::find_if(out.begin(), out.end(),
                           [&](const InterfaceTimestamping& i) { return i.name == a->ifa_name; });
    if (it == out.end()) {
      out.push_back({a->ifa_name, {}, {}});
      it = out.end() - 1;
    }
    it->addresses.push_back(address);
  }
  ::freeifaddrs(list);
  for (InterfaceTimestamping& i : out) i.hardware = detect_hardware(i.name);
  return out;
}

}  // namespace nabla::common
