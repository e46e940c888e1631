#pragma once
// Methods that take no params (inject.list, daemon.info) accept null or {}.
#include <nlohmann/json.hpp>

namespace nabla::common::protocol {

// Throws std::invalid_argument "params: METHOD takes none" for anything else.
void require_no_params(const nlohmann::json& params, const char* method);

}  // namespace nabla::common::protocol
