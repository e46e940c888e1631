#pragma once
// Methods that take no params (inject.list, daemon.info, clock.now) accept
// null or {}; their clients send {}.
#include <nlohmann/json.hpp>

namespace nabla::common::protocol {

// The message of a method that takes no params: its kMethod (and Result)
// come from the struct that derives from this one.
struct NoParams {
  nlohmann::json to_json() const { return nlohmann::json::object(); }
};

// Throws std::invalid_argument "params: METHOD takes none" for anything else.
void require_no_params(const nlohmann::json& params, const char* method);

}  // namespace nabla::common::protocol
