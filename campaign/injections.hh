#pragma once
// The injections a campaign holds (private to campaign/).
//
//  - LeaseKeeper: renews the lease of every held injection every lease/4 of
//    the campaign's clock. The campaign calls renew_due from its wait loop,
//    the only place it spends time while an injection runs, so renewals
//    follow a fake clock in tests like the real one in production. A failed
//    renewal throws (and so fails the run).
//  - ActiveInjection: RAII for one running injection. stop() returns the
//    daemon's final statistics; the destructor abandons it (best effort,
//    short timeout) if nobody stopped it, so an exception or a signal never
//    leaves an injection running longer than its lease.
//  - LinkInjections: the injections of one link, one per address family its
//    traffic used (a dual-stack pair: CampaignLink::family_specs), started
//    back to back with the same wave on the link's source node. The first
//    is the link's own spec; its statistics are the phase's.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "nabla/campaign/campaign.hh"
#include "nabla/campaign/environment.hh"

namespace nabla::campaign {

class LeaseKeeper {
 public:
  LeaseKeeper(Daemons& daemons, std::int64_t lease_ns);

  void add(const std::string& node, const std::string& id, std::int64_t now_ns);
  void remove(const std::string& node, const std::string& id);
  // Renews every lease whose last renewal (or start) is lease/4 old.
  void renew_due(std::int64_t now_ns);

 private:
  struct Held {
    std::string node;
    std::string id;
    std::int64_t due_ns = 0;
  };
  Daemons& daemons_;
  std::int64_t period_ns_;
  std::vector<Held> held_;
};

class ActiveInjection {
 public:
  // Starts `request` on `node` and registers it with `leases`. The anchor is
  // the clock when the call returned: the daemon starts the wave once its
  // rule is in place, just before it answers (docs/protocol.md), so the
  // anchor is late by the answer's transit only. The call's midpoint would
  // fall before the wave by half the rule's install time, a second on a
  // busy machine.
  ActiveInjection(Daemons& daemons, LeaseKeeper& leases, Clock& clock, const std::string& node,
                  const InjectionRequest& request);
  ~ActiveInjection();
  ActiveInjection(const ActiveInjection&) = delete;
  ActiveInjection& operator=(const ActiveInjection&) = delete;

  const std::string& id() const { return id_; }
  std::int64_t anchor_ns() const { return anchor_ns_; }
  // inject.stop; throws on failure.
  InjectionStats stop();

 private:
  Daemons& daemons_;
  LeaseKeeper& leases_;
  std::string node_;
  std::string id_;
  std::int64_t anchor_ns_ = 0;
  bool stopped_ = false;
};

class LinkInjections {
 public:
  // Starts `request` on the link's source node for link.spec, then for each
  // of link.family_specs (request.link_spec is replaced by each).
  LinkInjections(Daemons& daemons, LeaseKeeper& leases, Clock& clock, const CampaignLink& link,
                 const InjectionRequest& request);

  const std::string& id() const { return active_.front()->id(); }
  std::int64_t anchor_ns() const { return active_.front()->anchor_ns(); }
  // Stops every one; returns the first's statistics.
  InjectionStats stop();

 private:
  std::vector<std::unique_ptr<ActiveInjection>> active_;
};

}  // namespace nabla::campaign
