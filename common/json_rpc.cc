#include "nabla/common/json_rpc.hh"

namespace nabla::common {
namespace {

using nlohmann::json;

bool valid_id(const json& id) {
  return id.is_null() || id.is_string() || id.is_number_integer() || id.is_number_unsigned();
}

}  // namespace

bool json_depth_ok(std::string_view text, int max_depth) noexcept {
  int depth = 0;
  bool in_string = false;
  bool escaped = false;
  for (const char c : text) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth) return false;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return true;
}

std::string dump_json(const json& value) {
  return value.dump(-1, ' ', false, json::error_handler_t::replace);
}

json make_result(const json& id, json result) {
  return json{{"jsonrpc", "2.0"}, {"id", id}, {"result", std::move(result)}};
}

json make_error(const json& id, int code, const std::string& message) {
  return json{{"jsonrpc", "2.0"}, {"id", id}, {"error", {{"code", code}, {"message", message}}}};
}

json make_request(const json& id, const std::string& method, json params) {
  return json{{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", std::move(params)}};
}

json make_notification(const std::string& method, json params) {
  return json{{"jsonrpc", "2.0"}, {"method", method}, {"params", std::move(params)}};
}

ParsedRequest parse_request(std::string_view text) {
  if (!json_depth_ok(text)) {
    return make_error(nullptr, rpc_code::kParseError,
                      "parse error: JSON nested deeper than " + std::to_string(kMaxJsonDepth));
  }
  json doc = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded())
    return make_error(nullptr, rpc_code::kParseError, "parse error: invalid JSON");
  if (doc.is_array()) {
    return make_error(nullptr, rpc_code::kInvalidRequest,
                      "invalid request: batch requests are not supported");
  }
  if (!doc.is_object()) {
    return make_error(nullptr, rpc_code::kInvalidRequest, "invalid request: expected an object");
  }
  // Echo the id in errors when it is usable, so the caller can match them.
  json id = nullptr;
  const auto id_it = doc.find("id");
  const bool has_id = id_it != doc.end();
  if (has_id) {
    if (!valid_id(*id_it)) {
      return make_error(nullptr, rpc_code::kInvalidRequest,
                        "invalid request: 'id' must be an integer, a string or null");
    }
    id = *id_it;
  }
  const auto version = doc.find("jsonrpc");
  if (version == doc.end() || !version->is_string() ||
      version->get_ref<const std::string&>() != "2.0") {
    return make_error(id, rpc_code::kInvalidRequest, "invalid request: 'jsonrpc' must be \"2.0\"");
  }
  const auto method = doc.find("method");
  if (method == doc.end() || !method->is_string()) {
    return make_error(id, rpc_code::kInvalidRequest, "invalid request: 'method' must be a string");
  }
  RpcRequest request;
  if (has_id) request.id = id;
  request.method = method->get<std::string>();
  const auto params = doc.find("params");
  if (params != doc.end()) {
    if (!params->is_object() && !params->is_array()) {
      return make_error(id, rpc_code::kInvalidRequest,
                        "invalid request: 'params' must be an object or an array");
    }
    request.params = std::move(*params);
  }
  return request;
}

RpcResponse parse_response(std::string_view text) {
  if (!json_depth_ok(text)) throw RpcError(rpc_code::kParseError, "response nested too deeply");
  json doc = json::parse(text.begin(), text.end(), nullptr, false);
  if (doc.is_discarded()) throw RpcError(rpc_code::kParseError, "response is not valid JSON");
  if (!doc.is_object()) throw RpcError(rpc_code::kInvalidRequest, "response is not an object");
  const auto version = doc.find("jsonrpc");
  if (version == doc.end() || *version != "2.0") {
    throw RpcError(rpc_code::kInvalidRequest, "response lacks \"jsonrpc\":\"2.0\"");
  }
  RpcResponse response;
  const auto id = doc.find("id");
  if (id == doc.end() || !valid_id(*id)) {
    throw RpcError(rpc_code::kInvalidRequest, "response lacks a valid 'id'");
  }
  response.id = *id;
  const auto result = doc.find("result");
  const auto error = doc.find("error");
  if ((result == doc.end()) == (error == doc.end())) {
    throw RpcError(rpc_code::kInvalidRequest, "response must have exactly one of result, error");
  }
  if (result != doc.end()) {
    response.result = std::move(*result);
    return response;
  }
  if (!error->is_object()) throw RpcError(rpc_code::kInvalidRequest, "'error' is not an object");
  const auto code = error->find("code");
  const auto message = error->find("message");
  if (code == error->end() || !code->is_number_integer() || message == error->end() ||
      !message->is_string()) {
    throw RpcError(rpc_code::kInvalidRequest, "'error' needs an integer code and a string message");
  }
  const auto code_value = code->get<int64_t>();
  response.error_code = code_value < INT32_MIN || code_value > INT32_MAX
                            ? rpc_code::kInternalError
                            : static_cast<int>(code_value);
  response.error_message = message->get<std::string>();
  return response;
}

}  // namespace nabla::common
