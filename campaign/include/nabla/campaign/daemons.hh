#pragma once
// The production Daemons (environment.hh): one authenticated RpcClient per
// nabla-injectd and per nabla-sniffd of the campaign's nodes, opened up
// front; an unreachable daemon is one error naming the node. A client whose
// connection broke, or was closed by the daemon's idle timeout, is
// reconnected at its next call. lease.renew retries once
// after a transport error and never after the daemon's own refusal (the
// injection is gone: no retry helps). Calls throw the client's errors as
// they are (environment.hh).
//
// inject.start and inject.stop change the node's packet filter (an iptables
// command each, which waits up to 5 s for the xtables lock and, beside a
// build on 2 cores, took 20 ms to 1.6 s to run): they are given
// kRuleChangeTimeout, never less than the control timeout. A stop that
// outlived the control timeout would otherwise end the campaign, while the
// daemon goes on to remove the rule anyway.
//
// Every injection of a run carries the run's session token (`owner`,
// "run-" + 16 random hex digits): the daemons let only this run stop or
// renew it, also after a reconnection (docs/security.md).
//
// The JSON of every message the campaign sends or reads is built or read in
// one function each (daemons.cc), with the shapes of docs/protocol.md.
#include <chrono>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "nabla/campaign/environment.hh"
#include "nabla/campaign/spec.hh"
#include "nabla/common/rpc.hh"

namespace nabla::campaign {

// How long a call that adds or removes a node's rule may take.
inline constexpr std::chrono::milliseconds kRuleChangeTimeout{20'000};

class RpcDaemons final : public Daemons {
 public:
  // Connects to every daemon of every node; throws std::runtime_error
  // "node NAME: cannot reach nabla-injectd at H:P: ..." on the first failure.
  RpcDaemons(const CampaignSpec& spec, std::chrono::milliseconds timeout);

  std::optional<FlowsPage> list_flows(const std::string& node, std::uint64_t cursor) override;
  std::string start_injection(const std::string& node, const InjectionRequest& request) override;
  InjectionStats stop_injection(const std::string& node, const std::string& id) override;
  void abandon_injection(const std::string& node, const std::string& id) noexcept override;
  void renew_lease(const std::string& node, const std::string& id) override;

 private:
  struct Entry {
    const CampaignNode* node = nullptr;
    // Each daemon's key from the campaign's key file or directory, if any.
    std::optional<common::Key> injectd_key;
    std::optional<common::Key> sniffd_key;
    std::optional<common::RpcClient> injectd;
    std::optional<common::RpcClient> sniffd;
  };
  // The node's injectd client, reconnected when its connection broke.
  common::RpcClient& injectd(const std::string& node, std::chrono::milliseconds timeout);

  std::chrono::milliseconds timeout_;
  std::chrono::milliseconds rule_change_timeout_;
  std::string session_;  // this run's owner token
  std::map<std::string, Entry> nodes_;
};

// The "delay" object of inject.start (duty 0.5); the run history stores the
// same object (cycles 0) with each injection.
nlohmann::json square_wave_json(std::int64_t amplitude_ns, std::int64_t period_ns, int cycles);

}  // namespace nabla::campaign
