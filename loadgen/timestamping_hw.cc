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

std::string route_interface(const std::string& ipv4_host) {
  sockaddr_in target{};
  target.sin_family = AF_INET;
  target.sin_port = htons(9);  // connect() on UDP sends nothing; any port will do
  if (::inet_pton(AF_INET, ipv4_host.c_str(), &target.sin_addr) != 1) {
    throw std::invalid_argument("not an IPv4 address: '" + ipv4_host + "'");
  }
  auto fd = common::interface_control_socket();
  if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&target), sizeof target) != 0) {
    throw std::system_error(errno, std::system_category(), "connect(UDP) to " + ipv4_host);
  }
  sockaddr_in local{};
  socklen_t len = sizeof local;
  if (::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&local), &len) != 0) {
    throw std::system_error(errno, std::system_category(), "getsockname");
  }
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0)
    throw std::system_error(errno, std::system_category(), "getifaddrs");
  std::string name;
  for (ifaddrs* a = list; a != nullptr; a = a->ifa_next) {
    if (a->ifa_addr == nullptr || a->ifa_addr->sa_family != AF_INET) continue;
    const auto* in = reinterpret_cast<const sockaddr_in*>(a->ifa_addr);
    if (in->sin_addr.s_addr == local.sin_addr.s_addr) {
      name = a->ifa_name;
      break;
    }
  }
  ::freeifaddrs(list);
  if (name.empty()) throw std::runtime_error("no interface holds the route's source address");
  return name;
}

TimestampPlan plan_timestamps(const std::string& ipv4_host) {
  TimestampPlan plan;
  plan.source = TimestampSource::kSoftware;
  try {
    plan.interface = route_interface(ipv4_host);
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
