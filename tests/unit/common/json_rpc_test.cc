#include "nabla/common/json_rpc.hh"

#include <gtest/gtest.h>

#include <string>

namespace nabla::common {
namespace {

using nlohmann::json;

// Returns the error response parse_request produced (fails if it accepted).
json error_of(const std::string& text) {
  ParsedRequest parsed = parse_request(text);
  if (!std::holds_alternative<json>(parsed)) {
    ADD_FAILURE() << "accepted: " << text;
    return {};
  }
  return std::get<json>(parsed);
}

RpcRequest request_of(const std::string& text) {
  ParsedRequest parsed = parse_request(text);
  if (!std::holds_alternative<RpcRequest>(parsed)) {
    ADD_FAILURE() << "rejected: " << text << " -> " << std::get<json>(parsed).dump();
    return {};
  }
  return std::get<RpcRequest>(parsed);
}

TEST(ParseRequest, ValidShapes) {
  RpcRequest r = request_of(R"({"jsonrpc":"2.0","id":7,"method":"inject.start","params":{"a":1}})");
  EXPECT_EQ(r.id, json(7));
  EXPECT_EQ(r.method, "inject.start");
  EXPECT_EQ(r.params, json({{"a", 1}}));

  r = request_of(R"({"jsonrpc":"2.0","id":"abc","method":"m"})");
  EXPECT_EQ(r.id, json("abc"));
  EXPECT_EQ(r.params, json::object());

  r = request_of(R"({"jsonrpc":"2.0","id":null,"method":"m","params":[1,2]})");
  EXPECT_EQ(r.id, json(nullptr));
  EXPECT_EQ(r.params, json::array({1, 2}));

  r = request_of(R"({"jsonrpc":"2.0","method":"note"})");
  EXPECT_FALSE(r.id.has_value());  // notification
}

TEST(ParseRequest, ErrorsHaveStandardCodes) {
  json e = error_of("{not json");
  EXPECT_EQ(
      e,
      json::parse(
          R"({"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error: invalid JSON"}})"));
  EXPECT_EQ(error_of("")["error"]["code"], -32700);
  EXPECT_EQ(error_of("\xff\xfe")["error"]["code"], -32700);
  EXPECT_EQ(error_of(R"({"jsonrpc":"2.0","id":1,"method":"m\xff"})")["error"]["code"], -32700);
  EXPECT_EQ(error_of("[]")["error"]["code"], -32600);
  EXPECT_EQ(error_of("[]")["error"]["message"],
            "invalid request: batch requests are not supported");
  EXPECT_EQ(error_of("42")["error"]["code"], -32600);
  EXPECT_EQ(error_of(R"({"id":3,"method":"m"})"),
            json::parse(R"({"jsonrpc":"2.0","id":3,"error":{"code":-32600,)"
                        R"("message":"invalid request: 'jsonrpc' must be \"2.0\""}})"));
  EXPECT_EQ(error_of(R"({"jsonrpc":"1.0","id":3,"method":"m"})")["error"]["code"], -32600);
  EXPECT_EQ(error_of(R"({"jsonrpc":"2.0","id":3})")["error"]["message"],
            "invalid request: 'method' must be a string");
  EXPECT_EQ(error_of(R"({"jsonrpc":"2.0","id":3,"method":5})")["id"], 3);
  EXPECT_EQ(error_of(R"({"jsonrpc":"2.0","id":1.5,"method":"m"})")["id"], nullptr);
  EXPECT_EQ(error_of(R"({"jsonrpc":"2.0","id":[1],"method":"m"})")["error"]["code"], -32600);
  EXPECT_EQ(error_of(R"({"jsonrpc":"2.0","id":1,"method":"m","params":3})")["error"]["message"],
            "invalid request: 'params' must be an object or an array");
}

TEST(ParseRequest, DepthLimit) {
  const std::string ok = std::string(kMaxJsonDepth - 1, '[') + std::string(kMaxJsonDepth - 1, ']');
  EXPECT_TRUE(json_depth_ok(ok));
  EXPECT_TRUE(
      json_depth_ok(R"({"s":")" + std::string(1000, '[') + R"("})"));  // brackets in strings
  EXPECT_TRUE(json_depth_ok(R"({"s":"\"[[[["})", 1));
  const std::string deep = std::string(100'000, '[') + std::string(100'000, ']');
  EXPECT_FALSE(json_depth_ok(deep));
  EXPECT_EQ(error_of(deep)["error"]["code"], -32700);
  const std::string params = R"({"jsonrpc":"2.0","id":1,"method":"m","params":{"a":)" +
                             std::string(70, '[') + std::string(70, ']') + "}}";
  EXPECT_EQ(error_of(params)["error"]["code"], -32700);
}

TEST(ParseResponse, ResultAndError) {
  RpcResponse r = parse_response(R"({"jsonrpc":"2.0","id":7,"result":{"ok":true}})");
  EXPECT_EQ(r.id, json(7));
  ASSERT_TRUE(r.result);
  EXPECT_EQ(*r.result, json({{"ok", true}}));

  r = parse_response(R"({"jsonrpc":"2.0","id":7,"result":null})");
  ASSERT_TRUE(r.result);
  EXPECT_TRUE(r.result->is_null());

  r = parse_response(R"({"jsonrpc":"2.0","id":null,"error":{"code":-32601,"message":"nope"}})");
  EXPECT_FALSE(r.result);
  EXPECT_EQ(r.error_code, -32601);
  EXPECT_EQ(r.error_message, "nope");

  for (const char* bad :
       {"", "[]", R"({"id":1,"result":1})", R"({"jsonrpc":"2.0","result":1})",
        R"({"jsonrpc":"2.0","id":1})", R"({"jsonrpc":"2.0","id":1,"result":1,"error":{}})",
        R"({"jsonrpc":"2.0","id":1,"error":{"code":"x","message":"m"}})",
        R"({"jsonrpc":"2.0","id":1,"error":5})"}) {
    EXPECT_THROW(parse_response(bad), RpcError) << bad;
  }
}

TEST(MakeMessages, Shapes) {
  EXPECT_EQ(dump_json(make_result(7, {{"x", 1}})), R"({"id":7,"jsonrpc":"2.0","result":{"x":1}})");
  EXPECT_EQ(dump_json(make_error(nullptr, -32601, "m")),
            R"({"error":{"code":-32601,"message":"m"},"id":null,"jsonrpc":"2.0"})");
  EXPECT_EQ(dump_json(make_request(1, "a.b", json::object())),
            R"({"id":1,"jsonrpc":"2.0","method":"a.b","params":{}})");
  EXPECT_EQ(dump_json(make_notification("n", {{"k", "v"}})),
            R"({"jsonrpc":"2.0","method":"n","params":{"k":"v"}})");
  // Invalid UTF-8 from a handler never makes serialisation throw.
  EXPECT_EQ(dump_json(json(std::string("a\xff"))), "\"a\xEF\xBF\xBD\"");
}

}  // namespace
}  // namespace nabla::common
