// The Sniffer's other network namespaces; see sniffer.hh.
#include <fcntl.h>

#include <exception>

#include "nabla/common/log.hh"
#include "nabla/common/netns.hh"
#include "nabla/sniffer/sniffer.hh"

namespace nabla::sniffer {
namespace {

void add_counts(DumpCounters& into, const DumpCounters& more) {
  into.messages += more.messages;
  into.malformed += more.malformed;
  into.short_tcp_info += more.short_tcp_info;
  into.errors += more.errors;
}

// What a Sniffer in another namespace runs: the scan and destroy sources
// only. Conntrack stays with the own namespace: its rule would run iptables
// twice per namespace, and its events need a descriptor watched per
// namespace.
SnifferOptions options_for_other(const SnifferOptions& own) {
  SnifferOptions o = own;
  o.conntrack = false;
  o.conntrack_rule = false;
  o.namespaces = {};
  return o;
}

}  // namespace

void Sniffer::refresh_namespaces() {
  if (options_.namespaces.only_own()) return;
  std::set<common::NetnsId> present;
  for (const FoundNamespace& ns : list_namespaces(options_.namespace_roots)) {
    if (ns.id.inode == netns_.inode || !options_.namespaces.selects(ns)) continue;
    present.insert(ns.id);
    if (!others_.contains(ns.id) && !unusable_.contains(ns.id)) add_namespace(ns);
  }
  // A namespace that is gone takes its flows with it; flows.list readers
  // already had every change up to the last scan.
  std::erase_if(others_, [&](const auto& entry) { return !present.contains(entry.first); });
  std::erase_if(unusable_, [&](const common::NetnsId& id) { return !present.contains(id); });
}

void Sniffer::add_namespace(const FoundNamespace& ns) {
  const NetnsLabel label{ns.id.inode, ns.name, ns.container, false};
  try {
    const common::FileDescriptor fd = common::FileDescriptor::open(ns.path, O_RDONLY);
    std::unique_ptr<Sniffer> other;
    common::run_in_netns(fd.get(), [&] {
      other.reset(
          new Sniffer(options_for_other(options_), procs_, table_.shared_sequence(), label));
    });
    common::log_info("scanning namespace ", ns.name.empty() ? ns.path : ns.name, " (inode ",
                     ns.id.inode, ns.container.empty() ? "" : ", container " + ns.container, ")");
    others_.emplace(ns.id, std::move(other));
  } catch (const std::exception& e) {
    common::log_warn("namespace ", ns.path, " not scanned: ", e.what());
    unusable_.insert(ns.id);
  }
}

void Sniffer::add_namespace_stats(SnifferStats& s) const {
  s.namespaces = 1 + others_.size();
  for (const auto& [id, other] : others_) {
    const SnifferStats o = other->stats();
    add_counts(s.sock_diag, o.sock_diag);
    add_counts(s.destroy, o.destroy);
    s.destroy_lost += o.destroy_lost;
    s.sockets_last_scan += o.sockets_last_scan;
    s.flows += o.flows;
  }
}

SourceStatus Sniffer::namespaces_status() const {
  size_t named = 0;
  size_t containers = 0;
  for (const auto& [id, other] : others_) {
    named += other->netns_.name.empty() ? 0 : 1;
    containers += other->netns_.container.empty() ? 0 : 1;
  }
  return {"namespaces", true,
          std::to_string(others_.size()) + " other network namespaces scanned (" +
              std::to_string(named) + " named, " + std::to_string(containers) +
              " containers), re-listed every scan; conntrack in this one only"};
}

}  // namespace nabla::sniffer
