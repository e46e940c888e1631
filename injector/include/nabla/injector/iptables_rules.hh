#pragma once
// The rule backend: steers a link's packets into an NFQUEUE. Behind an
// interface so an nftables backend can be added.
//
// The iptables backend keeps every rule in the daemon's own chains NABLA-OUT,
// NABLA-IN and NABLA-FWD of the mangle table (for iptables and ip6tables),
// jumped to from the end of mangle's OUTPUT, INPUT and FORWARD. mangle runs
// before filter on each of these hooks, so a packet the queue accepts (or
// bypasses) still traverses every filter rule: an injection never weakens
// the host firewall. Each rule carries `-m comment --comment nabla:<id>` and
// `-j NFQUEUE --queue-num N --queue-bypass`, so if the daemon dies packets
// flow on undelayed. A rule is an object whose destructor deletes it; the
// chains object removes jumps and chains on destruction, and its constructor
// first removes leftovers of a crashed run. Commands run via fork/exec with an
// argument vector (never a shell); failures throw with the command's stderr.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "nabla/common/link_spec.hh"
#include "nabla/common/protocol/injectd.hh"

namespace nabla::injector {

// Packets the daemon itself re-sends (duplicate fault) carry this mark and
// every rule skips them, so a copy is never queued again.
inline constexpr uint32_t kNablaPacketMark = 0x6e61626c;  // "nabl"

// The hook an injection sits on is part of the control protocol; its
// to_string and parse_direction come with it.
using Direction = common::protocol::Direction;
using Release = common::protocol::Release;

struct RuleSpec {
  common::LinkSpec link;
  Direction direction = Direction::kOut;
  uint16_t queue_num = 0;
  std::string injection_id;  // [A-Za-z0-9_-], goes into the comment
};

// An installed rule; destroying it removes it from the kernel.
class InstalledRule {
 public:
  virtual ~InstalledRule() = default;
};

class RuleBackend {
 public:
  virtual ~RuleBackend() = default;
  virtual std::unique_ptr<InstalledRule> install(const RuleSpec& spec) = 0;
};

// The argument vectors (after the program name and before -A/-D CHAIN) for
// one spec; pure, for tests. One entry per iptables rule (a protocol-`any`
// spec with ports becomes a tcp and a udp rule).
std::vector<std::vector<std::string>> iptables_match_args(const RuleSpec& spec);
std::string chain_for(Direction direction);

class IptablesBackend : public RuleBackend {
 public:
  // Removes stale NABLA chains (from a crashed run), then creates fresh ones
  // and the jumps to them, for both IPv4 and IPv6 (IPv6 skipped with a
  // warning if ip6tables is unusable).
  IptablesBackend();
  // Deletes jumps and chains. Never throws.
  ~IptablesBackend() override;
  IptablesBackend(const IptablesBackend&) = delete;
  IptablesBackend& operator=(const IptablesBackend&) = delete;

  std::unique_ptr<InstalledRule> install(const RuleSpec& spec) override;

  // Removes NABLA jumps and chains left in this namespace, in mangle and in
  // filter (where older builds kept them). Returns how many chains were
  // removed (per family and table). Never throws.
  static int remove_stale_chains() noexcept;

  // "mangle": the table of the chains.
  static const char* table();

  // `iptables-save` output lines containing NABLA (for tests and --check).
  static std::vector<std::string> nabla_lines();

 private:
  bool ipv6_ = true;
};

}  // namespace nabla::injector
