// Who may stop, update and renew an injection, and which may not run
// together (injector/ownership.hh): pure policy, no kernel.
#include "nabla/injector/ownership.hh"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "nabla/common/json_rpc.hh"

namespace nabla::injector {
namespace {

using common::RpcCaller;
using common::RpcError;
using common::protocol::Direction;

// The error check() throws, or "" when it throws none.
template <class F>
std::pair<int, std::string> error_of(F check) {
  try {
    check();
  } catch (const RpcError& e) {
    return {e.code(), e.what()};
  }
  return {0, ""};
}

const RpcCaller kCoordinator{"0123456789abcdef", 7, "10.0.0.9"};
const RpcCaller kReconnected{"0123456789abcdef", 12, "10.0.0.9"};
const RpcCaller kOtherKey{"fedcba9876543210", 8, "10.0.0.8"};

TEST(Ownership, TheSameKeyAndTokenOwnAcrossConnections) {
  const Owner owner = owner_of(kCoordinator, "run-1");
  EXPECT_EQ(owner_of(kReconnected, "run-1"), owner);  // a reconnection keeps it
  EXPECT_EQ(error_of([&] {
              check_may_change("inj-1", owner, owner_of(kReconnected, "run-1"), false, "stop");
            }).first,
            0);
  EXPECT_EQ(owner_text(owner), "session run-1, key 0123456789abcdef");
  EXPECT_EQ(owner_text(owner_of(kCoordinator, std::nullopt)), "key 0123456789abcdef");
  EXPECT_EQ(owner_text(owner_of(RpcCaller{}, std::nullopt)), "key none");
}

TEST(Ownership, AnotherTokenOrKeyNeedsForce) {
  const Owner owner = owner_of(kCoordinator, "run-1");
  for (const Owner& other : {owner_of(kCoordinator, "run-2"), owner_of(kCoordinator, std::nullopt),
                             owner_of(kOtherKey, "run-1")}) {
    const auto [code, message] =
        error_of([&] { check_may_change("inj-4", owner, other, false, "renew"); });
    EXPECT_EQ(code, common::rpc_code::kConflict);
    EXPECT_EQ(message.rfind("inj-4 belongs to session run-1, key 0123456789abcdef, not to this "
                            "caller (" +
                                owner_text(other) + "): give \"force\": true to renew it anyway",
                            0),
              0u)
        << message;
    EXPECT_EQ(error_of([&] { check_may_change("inj-4", owner, other, true, "renew"); }).first, 0);
  }
}

TEST(Ownership, AnOverlappingLinkInTheSameDirectionIsRefusedNamingTheOther) {
  const std::vector<LiveLink> live = {
      {"inj-1", common::parse_link_spec("udp 10.0.0.1 -> 10.0.0.2:9000"), Direction::kOut,
       owner_of(kCoordinator, "run-1")},
      {"inj-2", common::parse_link_spec("tcp 10.0.0.1 -> 10.0.0.2:80"), Direction::kIn,
       owner_of(kOtherKey, std::nullopt)}};
  const auto refusal = [&](const char* link, Direction direction) {
    return error_of([&] { check_no_overlap(common::parse_link_spec(link), direction, live); });
  };
  const auto [code, message] = refusal("any 10.0.0.1 -> 10.0.0.2", Direction::kOut);
  EXPECT_EQ(code, common::rpc_code::kConflict);
  EXPECT_EQ(message,
            "link: any 10.0.0.1:* -> 10.0.0.2:* (out) overlaps inj-1 (udp 10.0.0.1:* -> "
            "10.0.0.2:9000, session run-1, key 0123456789abcdef), which is live; stop it first "
            "or name a link that does not overlap");
  EXPECT_NE(refusal("tcp 10.0.0.1 -> 10.0.0.2:80-81", Direction::kIn).second.find("inj-2"),
            std::string::npos);
  EXPECT_EQ(refusal("udp 10.0.0.1 -> 10.0.0.2:9000", Direction::kIn).first, 0);   // other hook
  EXPECT_EQ(refusal("udp 10.0.0.1 -> 10.0.0.2:9001", Direction::kOut).first, 0);  // other port
  EXPECT_EQ(refusal("tcp 10.0.0.1 -> 10.0.0.2:80", Direction::kOut).first, 0);
}

}  // namespace
}  // namespace nabla::injector
