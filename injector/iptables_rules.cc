#include "nabla/injector/iptables_rules.hh"

#include <stdexcept>

#include "nabla/common/log.hh"
#include "nabla/common/netns.hh"

namespace nabla::injector {

namespace {

using Argv = std::vector<std::string>;

struct ChainSpec {
  const char* base;
  const char* own;
};
constexpr ChainSpec kChains[] = {
    {"OUTPUT", "NABLA-OUT"}, {"INPUT", "NABLA-IN"}, {"FORWARD", "NABLA-FWD"}};

const char* program_for(bool ipv6) {
  return ipv6 ? "ip6tables" : "iptables";
}

// The table the chains live in: mangle runs before filter on every hook
// (INPUT, OUTPUT and FORWARD alike), so a packet NFQUEUE accepts, or lets
// by with --queue-bypass while no daemon listens, still meets every rule
// of filter: the host firewall (ufw, Docker's isolation, a plain DROP)
// keeps deciding. In filter, the verdict would skip all of them.
constexpr const char* kTable = "mangle";
// Where chains of older builds lived; swept at start like stale ones.
constexpr const char* kLegacyTable = "filter";

Argv command(bool ipv6, const char* table, Argv args) {
  Argv argv = {program_for(ipv6), "-w", "5", "-t", table};
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

common::CommandResult run(bool ipv6, Argv args, const char* table = kTable) {
  return common::run_command(command(ipv6, table, std::move(args)));
}

void run_checked(bool ipv6, Argv args) {
  common::run_checked(command(ipv6, kTable, std::move(args)));
}

std::string ports_arg(const common::PortRange& r) {
  return r.low == r.high ? std::to_string(r.low)
                         : std::to_string(r.low) + ":" + std::to_string(r.high);
}

int remove_family(bool ipv6, const char* table = kTable) noexcept {
  int removed = 0;
  try {
    for (const auto& c : kChains) {
      // Delete every jump (a crash between runs may have left several).
      for (int i = 0; i < 16; ++i) {
        if (run(ipv6, {"-D", c.base, "-j", c.own}, table).exit_code != 0) break;
      }
      if (run(ipv6, {"-F", c.own}, table).exit_code == 0 &&
          run(ipv6, {"-X", c.own}, table).exit_code == 0) {
        ++removed;
      }
    }
  } catch (const std::exception& e) {
    common::log_warn(program_for(ipv6), ": removing NABLA chains: ", e.what());
  }
  return removed;
}

class IptablesRule : public InstalledRule {
 public:
  IptablesRule(bool ipv6, std::string chain, std::vector<Argv> rules)
      : ipv6_(ipv6), chain_(std::move(chain)), rules_(std::move(rules)) {}
  ~IptablesRule() override {
    for (const auto& rule : rules_) {
      Argv args = {"-D", chain_};
      args.insert(args.end(), rule.begin(), rule.end());
      try {
        const auto r = run(ipv6_, args);
        if (r.exit_code != 0) common::log_warn("removing rule failed: ", r.stderr_text);
      } catch (const std::exception& e) {
        common::log_warn("removing rule: ", e.what());
      }
    }
  }
  // Rules are appended one by one; track how many made it for rollback.
  void add(Argv rule) { rules_.push_back(std::move(rule)); }

 private:
  bool ipv6_;
  std::string chain_;
  std::vector<Argv> rules_;
};

}  // namespace

std::string chain_for(Direction direction) {
  return kChains[static_cast<int>(direction)].own;
}

std::vector<Argv> iptables_match_args(const RuleSpec& spec) {
  const auto& link = spec.link;
  const bool v6 = link.src.address.is_v6();
  const std::string prefix = v6 ? "/128" : "/32";
  const bool ports = !link.src.ports.is_any() || !link.dst.ports.is_any();
  std::vector<std::string> protocols;
  if (link.protocol == common::Protocol::kTcp) {
    protocols = {"tcp"};
  } else if (link.protocol == common::Protocol::kUdp) {
    protocols = {"udp"};
  } else if (ports) {
    protocols = {"tcp", "udp"};
  } else {
    protocols = {""};
  }
  std::vector<Argv> out;
  for (const auto& proto : protocols) {
    Argv a = {"-s", link.src.address.to_string() + prefix, "-d",
              link.dst.address.to_string() + prefix};
    if (!proto.empty()) {
      a.insert(a.end(), {"-p", proto});
      if (!link.src.ports.is_any()) a.insert(a.end(), {"--sport", ports_arg(link.src.ports)});
      if (!link.dst.ports.is_any()) a.insert(a.end(), {"--dport", ports_arg(link.dst.ports)});
    }
    // Copies the daemon re-sends itself (duplicate fault) carry the mark.
    a.insert(a.end(), {"-m", "mark", "!", "--mark", std::to_string(kNablaPacketMark)});
    a.insert(a.end(), {"-m", "comment", "--comment", "nabla:" + spec.injection_id, "-j", "NFQUEUE",
                       "--queue-num", std::to_string(spec.queue_num), "--queue-bypass"});
    out.push_back(std::move(a));
  }
  return out;
}

IptablesBackend::IptablesBackend() {
  const int stale = remove_stale_chains();
  if (stale > 0) common::log_info("removed ", stale, " stale NABLA chains from a previous run");
  for (bool v6 : {false, true}) {
    try {
      for (const auto& c : kChains) {
        run_checked(v6, {"-N", c.own});
        // Appended: every mangle rule already there (a MARK for policy
        // routing, say) still runs before the packet is queued.
        run_checked(v6, {"-A", c.base, "-j", c.own});
      }
    } catch (const std::exception& e) {
      if (!v6) {
        remove_family(false);
        throw;
      }
      common::log_warn("ip6tables unusable, IPv6 links cannot be injected: ", e.what());
      remove_family(true);
      ipv6_ = false;
    }
  }
}

IptablesBackend::~IptablesBackend() {
  remove_family(false);
  if (ipv6_) remove_family(true);
}

int IptablesBackend::remove_stale_chains() noexcept {
  int removed = 0;
  for (const char* table : {kTable, kLegacyTable}) {
    removed += remove_family(false, table) + remove_family(true, table);
  }
  return removed;
}

const char* IptablesBackend::table() {
  return kTable;
}

std::vector<std::string> IptablesBackend::nabla_lines() {
  std::vector<std::string> lines;
  for (const char* prog : {"iptables-save", "ip6tables-save"}) {
    const auto r = common::run_command({prog});
    size_t start = 0;
    while (start < r.stdout_text.size()) {
      size_t end = r.stdout_text.find('\n', start);
      if (end == std::string::npos) end = r.stdout_text.size();
      std::string line = r.stdout_text.substr(start, end - start);
      if (line.find("NABLA") != std::string::npos || line.find("nabla:") != std::string::npos) {
        lines.push_back(std::move(line));
      }
      start = end + 1;
    }
  }
  return lines;
}

std::unique_ptr<InstalledRule> IptablesBackend::install(const RuleSpec& spec) {
  const bool v6 = spec.link.src.address.is_v6();
  if (v6 && !ipv6_) throw std::runtime_error("link: IPv6 rules unavailable (ip6tables unusable)");
  const std::string chain = chain_for(spec.direction);
  auto rule = std::make_unique<IptablesRule>(v6, chain, std::vector<Argv>{});
  for (auto& match : iptables_match_args(spec)) {
    Argv args = {"-A", chain};
    args.insert(args.end(), match.begin(), match.end());
    run_checked(v6, args);  // on failure `rule` removes what was added so far
    rule->add(std::move(match));
  }
  return rule;
}

}  // namespace nabla::injector
