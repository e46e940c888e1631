#include "nabla/injector/ownership.hh"

#include "nabla/common/json_rpc.hh"

namespace nabla::injector {

namespace protocol = common::protocol;

Owner owner_of(const common::RpcCaller& caller, const std::optional<std::string>& token) {
  return Owner{caller.key_id, token.value_or("")};
}

std::string owner_text(const Owner& owner) {
  const std::string key = "key " + (owner.key_id.empty() ? std::string("none") : owner.key_id);
  return owner.session.empty() ? key : "session " + owner.session + ", " + key;
}

void check_may_change(const std::string& id, const Owner& owner, const Owner& caller, bool force,
                      std::string_view verb) {
  if (owner == caller || force) return;
  throw common::RpcError(common::rpc_code::kConflict,
                         id + " belongs to " + owner_text(owner) + ", not to this caller (" +
                             owner_text(caller) + "): give \"force\": true to " +
                             std::string(verb) + " it anyway");
}

void check_no_overlap(const common::LinkSpec& link, protocol::Direction direction,
                      const std::vector<LiveLink>& live) {
  for (const LiveLink& other : live) {
    if (other.direction != direction || !common::links_overlap(link, other.link)) continue;
    throw common::RpcError(common::rpc_code::kConflict,
                           "link: " + common::to_string(link) + " (" +
                               std::string(protocol::to_string(direction)) + ") overlaps " +
                               other.id + " (" + common::to_string(other.link) + ", " +
                               owner_text(other.owner) +
                               "), which is live; stop it first or name a link that does "
                               "not overlap");
  }
}

}  // namespace nabla::injector
