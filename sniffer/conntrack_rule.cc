// nabla-sniffd's conntrack-enabling chain; see conntrack_rule.hh.
#include "nabla/sniffer/conntrack_rule.hh"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <fstream>
#include <sstream>
#include <vector>

#include "nabla/common/log.hh"
#include "nabla/common/netns.hh"
#include "nabla/common/text_file.hh"

namespace nabla::sniffer {
namespace {

using Argv = std::vector<std::string>;

constexpr const char* kAcctPath = "/proc/sys/net/netfilter/nf_conntrack_acct";

Argv iptables_argv(bool ipv6, const Argv& args) {
  Argv argv = {ipv6 ? "ip6tables" : "iptables", "-w", "5"};
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

common::CommandResult iptables(bool ipv6, const Argv& args) {
  return common::run_command(iptables_argv(ipv6, args));
}

void iptables_checked(bool ipv6, const Argv& args) {
  common::run_checked(iptables_argv(ipv6, args));
}

bool remove_chain(bool ipv6, const std::string& chain) noexcept {
  try {
    return iptables(ipv6, {"-F", chain}).exit_code == 0 &&
           iptables(ipv6, {"-X", chain}).exit_code == 0;
  } catch (const std::exception& e) {
    common::log_warn("removing ", chain, ": ", e.what());
    return false;
  }
}

void install_chain(bool ipv6, const std::string& chain) {
  iptables_checked(ipv6, {"-N", chain});
  try {
    iptables_checked(ipv6, {"-A", chain, "-m", "conntrack", "--ctstate", "NEW", "-m", "comment",
                            "--comment", "nabla-sniffd keeps conntrack on", "-j", "RETURN"});
  } catch (...) {
    remove_chain(ipv6, chain);
    throw;
  }
}

std::string read_text(const char* path) {
  std::string s = common::read_text_file(path);
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

bool write_text(const char* path, const std::string& value) {
  std::ofstream out(path);
  out << value << '\n';
  out.flush();
  return static_cast<bool>(out);
}

}  // namespace

std::string conntrack_chain_name(pid_t pid) {
  return std::string(kConntrackChainPrefix) + std::to_string(pid);
}

std::string acct_restore_comment(std::string_view value) {
  return "nabla-sniffd restores nf_conntrack_acct=" + std::string(value);
}

std::optional<std::string> acct_to_restore(std::string_view iptables_rules,
                                           std::string_view chain) {
  const std::string rule_start = "-A " + std::string(chain) + " ";
  const std::string marker = acct_restore_comment("");
  for (std::size_t at = 0; at < iptables_rules.size();) {
    const std::size_t end = std::min(iptables_rules.find('\n', at), iptables_rules.size());
    const std::string_view line = iptables_rules.substr(at, end - at);
    at = end + 1;
    if (line.rfind(rule_start, 0) != 0) continue;
    const std::size_t found = line.find(marker);
    if (found == std::string_view::npos) continue;
    const std::string_view rest = line.substr(found + marker.size());
    const std::string_view value = rest.substr(0, rest.find_first_not_of("0123456789"));
    if (!value.empty() && value.size() <= 3) return std::string(value);
  }
  return std::nullopt;
}

std::optional<pid_t> conntrack_chain_creator(std::string_view chain) {
  if (chain.substr(0, kConntrackChainPrefix.size()) != kConntrackChainPrefix) return std::nullopt;
  chain.remove_prefix(kConntrackChainPrefix.size());
  pid_t pid = 0;
  const auto [ptr, ec] = std::from_chars(chain.data(), chain.data() + chain.size(), pid);
  if (ec != std::errc() || ptr != chain.data() + chain.size() || pid <= 0) return std::nullopt;
  return pid;
}

int ConntrackRule::remove_stale() noexcept {
  int removed = 0;
  for (bool ipv6 : {false, true}) {
    try {
      const auto listing = iptables(ipv6, {"-S"});
      std::istringstream lines(listing.stdout_text);
      for (std::string line; std::getline(lines, line);) {
        if (line.rfind("-N ", 0) != 0) continue;
        const std::string chain = line.substr(3);
        const auto creator = conntrack_chain_creator(chain);
        if (!creator || *creator == ::getpid() || common::pid_alive(*creator)) continue;
        if (const auto value = acct_to_restore(listing.stdout_text, chain)) {
          if (read_text(kAcctPath) != *value && write_text(kAcctPath, *value)) {
            common::log_info("restored ", kAcctPath, "=", *value, ", which nabla-sniffd (pid ",
                             *creator, ") had changed and did not restore");
          }
        }
        if (remove_chain(ipv6, chain)) ++removed;
      }
    } catch (const std::exception& e) {
      common::log_warn(ipv6 ? "ip6tables" : "iptables", ": looking for stale chains: ", e.what());
    }
  }
  return removed;
}

ConntrackRule::ConntrackRule() : chain_(conntrack_chain_name(::getpid())) {
  const int stale = remove_stale();
  if (stale > 0) common::log_info("removed ", stale, " stale ", kConntrackChainPrefix, " chains");
  install_chain(false, chain_);
  try {
    install_chain(true, chain_);
    ipv6_ = true;
  } catch (const std::exception& e) {
    common::log_warn("ip6tables unusable, IPv6 connections are not tracked: ", e.what());
  }
  // The sysctl exists once the rule has loaded nf_conntrack.
  const std::string before = read_text(kAcctPath);
  if (before == "1") {
    accounting_ = true;
  } else if (!before.empty() && write_text(kAcctPath, "1")) {
    saved_acct_ = before;
    accounting_ = read_text(kAcctPath) == "1";
    record_restore_value(before);
  }
}

void ConntrackRule::record_restore_value(const std::string& value) noexcept {
  try {
    iptables_checked(false, {"-A", chain_, "-m", "comment", "--comment",
                             acct_restore_comment(value), "-j", "RETURN"});
  } catch (const std::exception& e) {
    common::log_warn("cannot record ", kAcctPath, "=", value,
                     " for a restore after a crash: ", e.what());
  }
}

ConntrackRule::~ConntrackRule() {
  if (abandoned_) return;
  if (saved_acct_ && !write_text(kAcctPath, *saved_acct_)) {
    common::log_warn("could not restore ", kAcctPath, " to ", *saved_acct_);
  }
  remove_chain(false, chain_);
  if (ipv6_) remove_chain(true, chain_);
}

}  // namespace nabla::sniffer
