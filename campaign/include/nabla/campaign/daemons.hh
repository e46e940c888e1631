#pragma once
// The campaign's connections to the nodes' daemons, and the injections it
// owns.
//
//  - DaemonSet: one authenticated RpcClient per nabla-injectd (control calls
//    from the campaign thread) and per nabla-sniffd, opened up front; an
//    unreachable daemon is one error naming the node.
//  - LeaseKeeper: a background thread with its OWN connection to every
//    injectd (RpcClient is one-call-at-a-time) renewing the lease of every
//    registered injection every lease/4. A failed renewal is kept as an error
//    the campaign thread polls (and fails the run on).
//  - ActiveInjection: RAII for one running injection. stop() returns the
//    daemon's final statistics; the destructor stops it best effort (short
//    timeout) if nobody did, so an exception or a signal never leaves an
//    injection running longer than its lease.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "nabla/common/rpc.hh"
#include "nabla/campaign/spec.hh"

namespace nabla::campaign {

class DaemonSet {
 public:
  // Connects to every daemon of every node; throws std::runtime_error
  // "node NAME: cannot reach nabla-injectd at H:P: ..." on the first failure.
  DaemonSet(const CampaignSpec& spec, std::chrono::milliseconds timeout);

  // nullptr when the node has no injectd / sniffd.
  common::RpcClient* injectd(const std::string& node);
  common::RpcClient* sniffd(const std::string& node);
  // Reconnects a node's injectd client (after a transport error).
  common::RpcClient& reconnect_injectd(const std::string& node, std::chrono::milliseconds timeout);

 private:
  struct Entry {
    const CampaignNode* node = nullptr;
    std::optional<common::Key> key;
    std::optional<common::RpcClient> injectd;
    std::optional<common::RpcClient> sniffd;
  };
  std::map<std::string, Entry> nodes_;
};

class LeaseKeeper {
 public:
  LeaseKeeper(const CampaignSpec& spec, std::int64_t lease_ns);
  ~LeaseKeeper();
  LeaseKeeper(const LeaseKeeper&) = delete;
  LeaseKeeper& operator=(const LeaseKeeper&) = delete;

  void add(const std::string& node, const std::string& id);
  void remove(const std::string& node, const std::string& id);
  // The first renewal failure, if any.
  std::optional<std::string> error() const;
  std::uint64_t renewals() const { return renewals_.load(); }

 private:
  void loop();

  const CampaignSpec& spec_;
  std::int64_t lease_ns_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::map<std::string, std::vector<std::string>> ids_;  // node -> injection ids
  std::map<std::string, std::optional<common::RpcClient>> clients_;
  std::optional<std::string> error_;
  std::atomic<std::uint64_t> renewals_{0};
  std::thread thread_;
};

class ActiveInjection {
 public:
  // Calls inject.start on `node`'s injectd with `params` (lease_s added) and
  // registers it with `leases`. Throws std::runtime_error naming the node.
  ActiveInjection(DaemonSet& daemons, LeaseKeeper& leases, const std::string& node,
                  nlohmann::json params);
  ~ActiveInjection();
  ActiveInjection(const ActiveInjection&) = delete;
  ActiveInjection& operator=(const ActiveInjection&) = delete;

  const std::string& id() const { return id_; }
  const std::string& node() const { return node_; }
  const nlohmann::json& started() const { return started_; }
  // Monotonic time when inject.start was answered, minus half the call's
  // round trip: the coordinator's best estimate of the wave's anchor.
  std::int64_t anchor_ns() const { return anchor_ns_; }
  // inject.stop; returns the "stats" object of the answer. Throws on failure.
  nlohmann::json stop();

 private:
  DaemonSet& daemons_;
  LeaseKeeper& leases_;
  std::string node_;
  std::string id_;
  nlohmann::json started_;
  std::int64_t anchor_ns_ = 0;
  bool stopped_ = false;
};

}  // namespace nabla::campaign
