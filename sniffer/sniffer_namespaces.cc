// The Sniffer's other network namespaces; see sniffer.hh.
#include <fcntl.h>
#include <sys/epoll.h>

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

// What a Sniffer in another namespace runs: every source of the own one,
// and no namespaces of its own.
SnifferOptions options_for_other(const SnifferOptions& own) {
  SnifferOptions o = own;
  o.namespaces = {};
  return o;
}

std::string label_text(const NetnsLabel& netns) {
  if (!netns.container.empty()) return "@ctr-" + netns.container;
  if (!netns.name.empty()) return "@" + netns.name;
  return "@netns-" + std::to_string(netns.inode);
}

}  // namespace

void Sniffer::refresh_namespaces() {
  if (options_.namespaces.only_own()) return;
  std::set<common::NetnsId> present;
  size_t skipped = 0;
  size_t user_owned = 0;
  for (const FoundNamespace& ns : list_namespaces(options_.namespace_roots)) {
    if (ns.id.inode == netns_.inode) continue;
    if (!options_.namespaces.selects(ns)) {
      user_owned += ns.user_owned && options_.namespaces.all;
      continue;
    }
    present.insert(ns.id);
    if (others_.contains(ns.id) || unusable_.contains(ns.id)) continue;
    if (others_.size() >= options_.max_namespaces) {
      ++skipped;  // the ones scanned keep their place; this one waits for room
      continue;
    }
    add_namespace(ns);
  }
  if (skipped != namespaces_skipped_ && skipped > 0) {
    common::log_warn("not scanning ", skipped, " network namespace(s): ", options_.max_namespaces,
                     " already scanned (--max-namespaces)");
  }
  namespaces_skipped_ = skipped;
  if (user_owned != user_owned_left_out_ && user_owned > 0) {
    common::log_info("not scanning ", user_owned,
                     " network namespace(s) owned by another user namespace (--user-netns)");
  }
  user_owned_left_out_ = user_owned;
  // A namespace that is gone takes its flows with it; flows.list readers
  // already had every change up to the last scan. Its conntrack chain went
  // with it: nothing is left to remove there.
  std::erase_if(others_, [&](auto& entry) {
    if (present.contains(entry.first)) return false;
    if (entry.second->conntrack_rule_) entry.second->conntrack_rule_->abandon();
    return true;
  });
  std::erase_if(unusable_, [&](const common::NetnsId& id) { return !present.contains(id); });
}

void Sniffer::add_namespace(const FoundNamespace& ns) {
  const NetnsLabel label{ns.id.inode, ns.name, ns.container, false};
  try {
    common::FileDescriptor fd = common::FileDescriptor::open(ns.path, O_RDONLY | O_CLOEXEC);
    std::unique_ptr<Sniffer> other;
    common::run_in_netns(fd.get(), [&] {
      other.reset(
          new Sniffer(options_for_other(options_), procs_, table_.shared_sequence(), label));
    });
    other->netns_fd_ = std::move(fd);
    if (conntrack_poll_.valid() && other->conntrack_) {
      epoll_event ev{};
      ev.events = EPOLLIN;
      ::epoll_ctl(conntrack_poll_.get(), EPOLL_CTL_ADD, other->conntrack_->fd(), &ev);
    }
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
  s.namespaces_skipped = namespaces_skipped_;
  for (const auto& [id, other] : others_) {
    const SnifferStats o = other->stats();
    add_counts(s.sock_diag, o.sock_diag);
    add_counts(s.destroy, o.destroy);
    s.destroy_lost += o.destroy_lost;
    s.sockets_last_scan += o.sockets_last_scan;
    s.flows += o.flows;
    s.flows_refused += o.flows_refused;
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
              " containers), re-listed every scan"};
}

std::string Sniffer::sources_line() const {
  std::string line = "netns " + label_text(netns_) + ":";
  const char* sep = " ";
  for (const SourceStatus& s : sources()) {
    line += sep + s.name + (s.active ? " active" : " inert (" + s.detail + ")");
    sep = ", ";
  }
  return line;
}

std::vector<std::string> Sniffer::namespace_sources() const {
  std::vector<std::string> lines;
  for (const auto& [id, other] : others_) lines.push_back(other->sources_line());
  return lines;
}

}  // namespace nabla::sniffer
