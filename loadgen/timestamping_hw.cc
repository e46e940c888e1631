// Hardware timestamping: detection (ETHTOOL_GET_TS_INFO), the decision on the
// driver's answer, enabling (SIOCSHWTSTAMP) and the per-run plan.
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <linux/ethtool.h>
#include <linux/net_tstamp.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>
#include <system_error>

#include "nabla/common/fd.hh"
#include "nabla/common/ip_address.hh"
#include "nabla/loadgen/phc_clock.hh"
#include "nabla/loadgen/timestamping.hh"

namespace nabla::loadgen {
namespace {

common::FileDescriptor control_socket() {
  common::FileDescriptor fd(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
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

}  // namespace

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
    auto fd = control_socket();
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

HardwareTimestamping::HardwareTimestamping(const std::string& interface) : interface_(interface) {
  auto fd = control_socket();
  hwtstamp_config previous{};
  ifreq get = interface_request(interface, &previous);
  if (::ioctl(fd.get(), SIOCGHWTSTAMP, &get) != 0) {
    throw std::system_error(errno, std::system_category(), "SIOCGHWTSTAMP on " + interface);
  }
  previous_tx_ = previous.tx_type;
  previous_rx_ = previous.rx_filter;
  hwtstamp_config config{};
  config.tx_type = HWTSTAMP_TX_ON;
  config.rx_filter = HWTSTAMP_FILTER_ALL;
  ifreq set = interface_request(interface, &config);
  if (::ioctl(fd.get(), SIOCSHWTSTAMP, &set) != 0) {
    throw std::system_error(errno, std::system_category(), "SIOCSHWTSTAMP on " + interface);
  }
}

HardwareTimestamping::~HardwareTimestamping() {
  try {
    auto fd = control_socket();
    hwtstamp_config config{};
    config.tx_type = previous_tx_;
    config.rx_filter = previous_rx_;
    ifreq set = interface_request(interface_, &config);
    if (::ioctl(fd.get(), SIOCSHWTSTAMP, &set) != 0) {
      std::fprintf(stderr, "nabla: restoring hardware timestamping on %s: %s\n", interface_.c_str(),
                   std::strerror(errno));
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "nabla: restoring hardware timestamping on %s: %s\n", interface_.c_str(),
                 e.what());
  }
}

std::string route_interface(const std::string& host) {
  const auto address = common::IpAddress::parse(host);
  if (!address) throw std::invalid_argument("not an IP address: '" + host + "'");
  sockaddr_storage target{};
  // connect() on UDP sends nothing; any port will do.
  const socklen_t target_len = common::to_sockaddr({*address, 9}, target);
  common::FileDescriptor fd(::socket(target.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (!fd) throw std::system_error(errno, std::system_category(), "socket(SOCK_DGRAM)");
  if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&target), target_len) != 0) {
    throw std::system_error(errno, std::system_category(), "connect(UDP) to " + host);
  }
  sockaddr_storage local{};
  socklen_t len = sizeof local;
  if (::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&local), &len) != 0) {
    throw std::system_error(errno, std::system_category(), "getsockname");
  }
  const auto source = common::endpoint_of(local);
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0)
    throw std::system_error(errno, std::system_category(), "getifaddrs");
  std::string name;
  for (ifaddrs* a = list; a != nullptr && source; a = a->ifa_next) {
    if (a->ifa_addr == nullptr) continue;
    const int family = a->ifa_addr->sa_family;
    if (family != AF_INET && family != AF_INET6) continue;
    sockaddr_storage held{};
    std::memcpy(&held, a->ifa_addr, family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6));
    const auto held_endpoint = common::endpoint_of(held);
    if (held_endpoint && held_endpoint->address == source->address) {
      name = a->ifa_name;
      break;
    }
  }
  ::freeifaddrs(list);
  if (name.empty()) throw std::runtime_error("no interface holds the route's source address");
  return name;
}

TimestampPlan plan_timestamps(const std::string& host) {
  TimestampPlan plan;
  plan.source = TimestampSource::kSoftware;
  try {
    plan.interface = route_interface(host);
  } catch (const std::exception& e) {
    plan.note = std::string("hardware timestamps not used: route lookup failed (") + e.what() + ")";
    return plan;
  }
  const HardwareTimestampInfo hw = detect_hardware(plan.interface);
  if (!hw.available) {
    plan.note = "hardware timestamps not used: " + hw.reason;
    return plan;
  }
  try {
    plan.hardware = std::make_unique<HardwareTimestamping>(plan.interface);
  } catch (const std::exception& e) {
    plan.note = "hardware timestamps not used: " + plan.interface + " supports them but " +
                std::string(e.what()) + " failed";
    return plan;
  }
  try {
    // The engine maps PHC time to CLOCK_MONOTONIC by reading this clock.
    PhcClock(hw.phc_index).read();
  } catch (const std::exception& e) {
    plan.hardware.reset();
    plan.note = "hardware timestamps not used: " + plan.interface + " stamps packets but its " +
                "PTP clock cannot be read (" + e.what() + ")";
    return plan;
  }
  plan.source = TimestampSource::kHardware;
  plan.phc_index = hw.phc_index;
  plan.note = "hardware timestamps on " + plan.interface + " (SIOCSHWTSTAMP), PHC /dev/ptp" +
              std::to_string(hw.phc_index) + " mapped to CLOCK_MONOTONIC";
  return plan;
}

}  // namespace nabla::loadgen
