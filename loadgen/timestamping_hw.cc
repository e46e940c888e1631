// Hardware timestamping: enabling (SIOCSHWTSTAMP) and the per-run plan; the
// detection is common/hw_timestamps.cc.
#include <arpa/inet.h>
#include <ifaddrs.h>
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
using common::interface_request;

HardwareTimestamping::HardwareTimestamping(const std::string& interface) : interface_(interface) {
  auto fd = common::interface_control_socket();
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
    auto fd = common::interface_control_socket();
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
