// Lease renewal and injection handles; see injections.hh.
#include "injections.hh"

#include <algorithm>
#include <stdexcept>

namespace nabla::campaign {

LeaseKeeper::LeaseKeeper(Daemons& daemons, std::int64_t lease_ns)
    : daemons_(daemons), period_ns_(lease_ns / 4) {}

void LeaseKeeper::add(const std::string& node, const std::string& id, std::int64_t now_ns) {
  held_.push_back(Held{node, id, now_ns + period_ns_});
}

void LeaseKeeper::remove(const std::string& node, const std::string& id) {
  std::erase_if(held_, [&](const Held& h) { return h.node == node && h.id == id; });
}

void LeaseKeeper::renew_due(std::int64_t now_ns) {
  for (Held& h : held_) {
    if (now_ns < h.due_ns) continue;
    try {
      daemons_.renew_lease(h.node, h.id);
    } catch (const std::exception& e) {
      throw std::runtime_error("node " + h.node + ": lease.renew of " + h.id +
                               " failed: " + e.what());
    }
    h.due_ns = now_ns + period_ns_;
  }
}

ActiveInjection::ActiveInjection(Daemons& daemons, LeaseKeeper& leases, Clock& clock,
                                 const std::string& node, const InjectionRequest& request)
    : daemons_(daemons), leases_(leases), node_(node) {
  try {
    id_ = daemons.start_injection(node, request);
  } catch (const std::exception& e) {
    throw std::runtime_error("node " + node + ": inject.start on " + request.link_spec +
                             " failed: " + e.what());
  }
  const std::int64_t after_ns = clock.now_ns();
  anchor_ns_ = after_ns;
  leases_.add(node_, id_, after_ns);
}

InjectionStats ActiveInjection::stop() {
  stopped_ = true;
  leases_.remove(node_, id_);
  try {
    return daemons_.stop_injection(node_, id_);
  } catch (const std::exception& e) {
    throw std::runtime_error("node " + node_ + ": inject.stop of " + id_ + " failed: " + e.what());
  }
}

ActiveInjection::~ActiveInjection() {
  if (stopped_) return;
  leases_.remove(node_, id_);
  daemons_.abandon_injection(node_, id_);
}

LinkInjections::LinkInjections(Daemons& daemons, LeaseKeeper& leases, Clock& clock,
                               const CampaignLink& link, const InjectionRequest& request) {
  InjectionRequest each = request;
  each.link_spec = link.spec;
  active_.push_back(std::make_unique<ActiveInjection>(daemons, leases, clock, link.src_node, each));
  for (const std::string& spec : link.family_specs) {
    each.link_spec = spec;
    active_.push_back(
        std::make_unique<ActiveInjection>(daemons, leases, clock, link.src_node, each));
  }
}

InjectionStats LinkInjections::stop() {
  InjectionStats first = active_.front()->stop();
  for (std::size_t i = 1; i < active_.size(); ++i) active_[i]->stop();
  return first;
}

}  // namespace nabla::campaign
