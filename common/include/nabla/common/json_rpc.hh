#pragma once
// JSON-RPC 2.0 message shapes for the control protocol, as pure functions
// (no I/O) so they can be unit-tested and fuzzed.
//
//   request   {"jsonrpc":"2.0","id":7,"method":"inject.start","params":{...}}
//   result    {"jsonrpc":"2.0","id":7,"result":{...}}
//   error     {"jsonrpc":"2.0","id":7,"error":{"code":-32602,"message":"..."}}
//
// Decisions: "id" may be an integer, a string or null; a request without
// "id" is a notification (executed, never answered). "params" may be an
// object or an array and defaults to {}. Batches (top-level arrays) are not
// supported and get -32600. Documents nested deeper than kMaxJsonDepth are
// refused with -32700 before nlohmann::json sees them.
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <variant>

namespace nabla::common {

namespace rpc_code {
inline constexpr int kParseError = -32700;
inline constexpr int kInvalidRequest = -32600;
inline constexpr int kMethodNotFound = -32601;
inline constexpr int kInvalidParams = -32602;
inline constexpr int kInternalError = -32603;
// Implementation-defined server errors (-32000..-32099).
inline constexpr int kAuthFailed = -32001;        // wrong HMAC; connection closed
inline constexpr int kNotAuthenticated = -32002;  // call before auth; connection closed
inline constexpr int kFrameTooLarge = -32003;     // frame over the limit; connection closed
// Another session's injection without force, or one overlapping a live
// injection; connection kept.
inline constexpr int kConflict = -32004;
}  // namespace rpc_code

inline constexpr int kMaxJsonDepth = 64;

// An error a handler throws (or a client receives): code + message.
class RpcError : public std::runtime_error {
 public:
  RpcError(int code, const std::string& message) : std::runtime_error(message), code_(code) {}
  int code() const noexcept { return code_; }

 private:
  int code_;
};

struct RpcRequest {
  std::optional<nlohmann::json> id;  // nullopt: notification
  std::string method;
  nlohmann::json params = nlohmann::json::object();
};

// Either a valid request or the complete error response to send back.
using ParsedRequest = std::variant<RpcRequest, nlohmann::json>;
ParsedRequest parse_request(std::string_view text);

struct RpcResponse {
  nlohmann::json id;
  std::optional<nlohmann::json> result;  // set on success
  int error_code = 0;                    // set when !result
  std::string error_message;
};

// Parses a response (client side). Throws RpcError(kParseError/
// kInvalidRequest) if the text is not a well-formed JSON-RPC response.
RpcResponse parse_response(std::string_view text);

nlohmann::json make_result(const nlohmann::json& id, nlohmann::json result);
nlohmann::json make_error(const nlohmann::json& id, int code, const std::string& message);
nlohmann::json make_request(const nlohmann::json& id, const std::string& method,
                            nlohmann::json params);
nlohmann::json make_notification(const std::string& method, nlohmann::json params);

// Serialises without throwing on invalid UTF-8 (replaced with U+FFFD).
std::string dump_json(const nlohmann::json& value);

// True when `text` nests arrays/objects no deeper than max_depth (strings are
// skipped correctly). Linear, no allocation.
bool json_depth_ok(std::string_view text, int max_depth = kMaxJsonDepth) noexcept;

}  // namespace nabla::common
