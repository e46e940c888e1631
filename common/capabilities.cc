#include "nabla/common/capabilities.hh"

#include <linux/capability.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>
#include <utility>

namespace nabla::common {

RequiredCapability cap_net_admin(std::string needed_for) {
  return {CAP_NET_ADMIN, "CAP_NET_ADMIN", std::move(needed_for)};
}

RequiredCapability cap_net_raw(std::string needed_for) {
  return {CAP_NET_RAW, "CAP_NET_RAW", std::move(needed_for)};
}

RequiredCapability cap_sys_nice(std::string needed_for) {
  return {CAP_SYS_NICE, "CAP_SYS_NICE", std::move(needed_for)};
}

RequiredCapability cap_sys_ptrace(std::string needed_for) {
  return {CAP_SYS_PTRACE, "CAP_SYS_PTRACE", std::move(needed_for)};
}

RequiredCapability cap_dac_read_search(std::string needed_for) {
  return {CAP_DAC_READ_SEARCH, "CAP_DAC_READ_SEARCH", std::move(needed_for)};
}

uint64_t effective_capabilities() {
  // Version 3 carries two 32-bit words: capabilities 0-31 and 32-63.
  __user_cap_header_struct header{};
  header.version = _LINUX_CAPABILITY_VERSION_3;
  header.pid = 0;
  __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3]{};
  if (::syscall(SYS_capget, &header, data) != 0) {
    throw std::system_error(errno, std::generic_category(), "capget");
  }
  return static_cast<uint64_t>(data[0].effective) |
         (static_cast<uint64_t>(data[1].effective) << 32);
}

std::vector<RequiredCapability> missing_capabilities(
    const std::vector<RequiredCapability>& required, uint64_t effective_mask) {
  std::vector<RequiredCapability> missing;
  for (const RequiredCapability& cap : required) {
    if ((effective_mask & (uint64_t{1} << cap.number)) == 0) missing.push_back(cap);
  }
  return missing;
}

std::string describe_capability(const RequiredCapability& cap) {
  return cap.name + " (needed for " + cap.needed_for + ")";
}

std::string missing_capability_message(const std::string& program,
                                       const RequiredCapability& missing) {
  return program + ": missing capability " + describe_capability(missing);
}

std::optional<std::string> check_capabilities(const std::string& program,
                                              const std::vector<RequiredCapability>& required) {
  const auto missing = missing_capabilities(required, effective_capabilities());
  if (missing.empty()) return std::nullopt;
  return missing_capability_message(program, missing.front());
}

}  // namespace nabla::common
