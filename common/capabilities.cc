#include "nabla/common/capabilities.hh"

#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <string>
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

RequiredCapability cap_sys_admin(std::string needed_for) {
  return {CAP_SYS_ADMIN, "CAP_SYS_ADMIN", std::move(needed_for)};
}

namespace {

struct CapabilitySets {
  uint64_t effective = 0;
  uint64_t permitted = 0;
  uint64_t inheritable = 0;
};

CapabilitySets read_capability_sets() {
  // Version 3 carries two 32-bit words: capabilities 0-31 and 32-63.
  __user_cap_header_struct header{};
  header.version = _LINUX_CAPABILITY_VERSION_3;
  header.pid = 0;
  __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3]{};
  if (::syscall(SYS_capget, &header, data) != 0) {
    throw std::system_error(errno, std::generic_category(), "capget");
  }
  const auto both = [&](auto member) {
    return static_cast<uint64_t>(data[0].*member) | (static_cast<uint64_t>(data[1].*member) << 32);
  };
  return {both(&__user_cap_data_struct::effective), both(&__user_cap_data_struct::permitted),
          both(&__user_cap_data_struct::inheritable)};
}

void write_capability_sets(const CapabilitySets& sets) {
  __user_cap_header_struct header{};
  header.version = _LINUX_CAPABILITY_VERSION_3;
  header.pid = 0;
  __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3]{};
  for (int word = 0; word < 2; ++word) {
    data[word].effective = static_cast<uint32_t>(sets.effective >> (32 * word));
    data[word].permitted = static_cast<uint32_t>(sets.permitted >> (32 * word));
    data[word].inheritable = static_cast<uint32_t>(sets.inheritable >> (32 * word));
  }
  if (::syscall(SYS_capset, &header, data) != 0) {
    throw std::system_error(errno, std::generic_category(), "capset");
  }
}

}  // namespace

uint64_t capability_mask(const std::vector<RequiredCapability>& caps) {
  uint64_t mask = 0;
  for (const RequiredCapability& cap : caps) mask |= uint64_t{1} << cap.number;
  return mask;
}

uint64_t drop_capabilities_except(const std::vector<RequiredCapability>& keep) {
  const uint64_t keep_mask = capability_mask(keep);
  const CapabilitySets before = read_capability_sets();
  // The bounding set's capabilities beyond `keep`. PR_CAPBSET_READ fails
  // (EINVAL) past the kernel's last capability.
  uint64_t bounding_extra = 0;
  uint64_t ambient = 0;
  for (int cap = 0; cap < 64; ++cap) {
    const int in_bounding = ::prctl(PR_CAPBSET_READ, cap, 0, 0, 0);
    if (in_bounding < 0) break;
    const uint64_t bit = uint64_t{1} << cap;
    if (in_bounding == 1 && (keep_mask & bit) == 0) bounding_extra |= bit;
    if (::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_IS_SET, cap, 0, 0) == 1) ambient |= bit;
  }
  // Already there (a systemd unit did it): change nothing.
  if (::prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) == 1 && (before.permitted & ~keep_mask) == 0 &&
      before.inheritable == 0 && bounding_extra == 0 && ambient == 0) {
    return before.permitted;
  }
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
    throw std::system_error(errno, std::generic_category(), "prctl(PR_SET_NO_NEW_PRIVS)");
  }
  // The bounding set before the capset below: dropping from it needs
  // CAP_SETPCAP, which the capset gives up. Without CAP_SETPCAP it stays,
  // and no_new_privs keeps what the daemon runs within the kept set anyway.
  if ((before.effective & (uint64_t{1} << CAP_SETPCAP)) != 0) {
    for (int cap = 0; cap < 64; ++cap) {
      if ((bounding_extra & (uint64_t{1} << cap)) == 0) continue;
      if (::prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0) {
        throw std::system_error(errno, std::generic_category(),
                                "prctl(PR_CAPBSET_DROP, " + std::to_string(cap) + ")");
      }
    }
  }
  if (ambient != 0 && ::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0) {
    throw std::system_error(errno, std::generic_category(), "prctl(PR_CAP_AMBIENT_CLEAR_ALL)");
  }
  const uint64_t kept = before.permitted & keep_mask;
  write_capability_sets({kept, kept, 0});
  return kept;
}

std::string describe_kept_capabilities(const std::vector<RequiredCapability>& caps, uint64_t mask) {
  std::string text;
  uint64_t named = 0;
  for (const RequiredCapability& cap : caps) {
    const uint64_t bit = uint64_t{1} << cap.number;
    if ((mask & bit) == 0 || (named & bit) != 0) continue;
    named |= bit;
    text += (text.empty() ? "" : ", ") + cap.name;
  }
  return text.empty() ? "none" : text;
}

uint64_t effective_capabilities() {
  return read_capability_sets().effective;
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
