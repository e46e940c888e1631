#pragma once
// Keeps conntrack live in nabla-sniffd's network namespace while it runs.
//
// The kernel tracks connections in a namespace only once a rule there needs
// it; without one, conntrack events never come. So the sniffer adds its own
// chain nabla-sniffd-<pid> (iptables, and ip6tables where usable) holding one
// rule that matches conntrack state and returns: nothing jumps to it, so no
// packet is filtered, but loading it turns tracking on. It also sets
// net.netfilter.nf_conntrack_acct=1 (per namespace) so DESTROY events carry
// packet and byte counts. On destruction the chain goes and the sysctl gets
// its old value back; chains of sniffers that died without cleaning up
// (creator pid no longer alive) are removed first. Where it changed the
// sysctl, the chain holds one more rule whose comment says the value to
// restore ("nabla-sniffd restores nf_conntrack_acct=0"), so the next sniffer
// in the namespace restores it after a crash (kill -9) too, before it sets
// its own: the state lives and dies with the namespace, no file needed. The name carries no
// "NABLA-" so it is never taken for one of injectd's chains. Commands run
// via fork/exec with an argument vector, never a shell.
#include <sys/types.h>

#include <optional>
#include <string>
#include <string_view>

namespace nabla::sniffer {

inline constexpr std::string_view kConntrackChainPrefix = "nabla-sniffd-";

// "nabla-sniffd-<pid>"; the creator's pid from such a name (nullopt otherwise).
std::string conntrack_chain_name(pid_t pid);
std::optional<pid_t> conntrack_chain_creator(std::string_view chain);
// The comment of the rule that records the value to restore, and the value
// such a rule of `chain` records in `iptables -S` output (digits only).
std::string acct_restore_comment(std::string_view value);
std::optional<std::string> acct_to_restore(std::string_view iptables_rules, std::string_view chain);

class ConntrackRule {
 public:
  // Installs the chain for this process. Throws std::runtime_error (or
  // common::CommandError) saying why, e.g. no iptables or no permission.
  ConntrackRule();
  // Removes the chain(s) and restores nf_conntrack_acct. Never throws.
  ~ConntrackRule();
  ConntrackRule(const ConntrackRule&) = delete;
  ConntrackRule& operator=(const ConntrackRule&) = delete;

  const std::string& chain() const { return chain_; }
  bool ipv6() const { return ipv6_; }
  // Whether nf_conntrack_acct is 1 (so DESTROY events carry counters).
  bool accounting() const { return accounting_; }

  // Forgets the chain without removing it: its namespace is gone, and the
  // chain with it. The destructor then does nothing.
  void abandon() noexcept { abandoned_ = true; }

  // Removes nabla-sniffd-<pid> chains whose creator is gone (both families),
  // restoring the nf_conntrack_acct value a removed chain records.
  // Returns how many were removed. Never throws.
  static int remove_stale() noexcept;

 private:
  std::string chain_;
  bool ipv6_ = false;
  bool accounting_ = false;
  bool abandoned_ = false;
  std::optional<std::string> saved_acct_;  // the value to restore, if we changed it
  // Adds the rule whose comment records `value` (see the top of this file).
  void record_restore_value(const std::string& value) noexcept;
};

}  // namespace nabla::sniffer
