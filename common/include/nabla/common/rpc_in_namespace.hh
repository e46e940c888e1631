#pragma once
// One JSON-RPC call to a daemon that listens inside a network namespace
// (typically on that namespace's loopback). The client's socket must live
// in the daemon's namespace, so a helper thread enters it with setns(2) and
// makes the call; the calling thread's namespace is unchanged.
#include <chrono>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "nabla/common/netns.hh"
#include "nabla/common/rpc.hh"
#include "nabla/common/rpc_auth.hh"

namespace nabla::common {

// Connects to the `daemon` ("injectd", "sniffd": RpcClient::connect) at
// host:port from inside `ns` (authenticating with the key
// `key_source` gives when the daemon requires one; it is called inside the
// namespace, so a daemon's run key file is looked up there), calls `method`
// and returns its result. Throws what RpcClient throws, or
// std::system_error when the namespace cannot be entered.
nlohmann::json call_in_namespace(const NetNamespace& ns, const std::string& host, uint16_t port,
                                 std::string_view daemon, const RpcClient::KeySource& key_source,
                                 const std::string& method, const nlohmann::json& params,
                                 std::chrono::milliseconds timeout = std::chrono::seconds(5));

}  // namespace nabla::common
