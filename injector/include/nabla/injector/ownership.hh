#pragma once
// Who an injection belongs to, and which injections may not run together.
//
// An injection belongs to the key its session authenticated with plus the
// session token its inject.start gave (`owner`; none: the key alone). Any
// session may list it and read its stats; stopping, updating or renewing it
// takes the same key and token, or `force`. The token is the client's, so a
// coordinator that reconnects after a dropped connection (or after the
// daemon's idle timeout) sends it again and keeps its injections. Pure
// policy: no kernel, no sockets; InjectorService applies it.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "nabla/common/link_spec.hh"
#include "nabla/common/protocol/injectd.hh"
#include "nabla/common/rpc.hh"

namespace nabla::injector {

struct Owner {
  std::string key_id;   // common::key_id of the caller's key; "" without a key
  std::string session;  // the client's token; "" for the key alone
  bool operator==(const Owner&) const = default;
};

Owner owner_of(const common::RpcCaller& caller, const std::optional<std::string>& token);
// "session run-1, key 0123456789abcdef", or "key 0123456789abcdef".
std::string owner_text(const Owner& owner);

// Throws common::RpcError (kConflict) naming both owners unless `caller`
// owns the injection or `force` is set; `verb` is "stop", "update" or
// "renew".
void check_may_change(const std::string& id, const Owner& owner, const Owner& caller, bool force,
                      std::string_view verb);

// A live injection, as far as overlap is concerned.
struct LiveLink {
  std::string id;
  common::LinkSpec link;
  common::protocol::Direction direction = common::protocol::Direction::kOut;
  Owner owner;
};

// Throws common::RpcError (kConflict) naming the first live injection on the
// same direction whose link overlaps `link`.
void check_no_overlap(const common::LinkSpec& link, common::protocol::Direction direction,
                      const std::vector<LiveLink>& live);

}  // namespace nabla::injector
