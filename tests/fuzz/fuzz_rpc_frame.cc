// libFuzzer target: arbitrary bytes through the control protocol's pure
// parsing layer, exactly as the server sees them: FrameDecoder (fed in
// chunks whose sizes come from the input), then parse_request on every
// frame, then the response the server would serialise. Also parse_response
// (the client side). Invariants are checked with abort() so libFuzzer
// reports them as crashes.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "nabla/common/json_rpc.hh"
#include "nabla/common/rpc_frame.hh"

namespace {

using nabla::common::FrameDecoder;
using nlohmann::json;

void check(bool ok) {
  if (!ok) std::abort();
}

bool standard_error(const json& response) {
  if (!response.is_object() || !response.contains("error")) return false;
  const json& code = response["error"]["code"];
  return code.is_number_integer() && (code == -32700 || code == -32600);
}

void exercise_payload(std::string_view payload) {
  const auto parsed = nabla::common::parse_request(payload);
  json response;
  if (const auto* error = std::get_if<json>(&parsed)) {
    check(standard_error(*error));
    response = *error;
  } else {
    const auto& request = std::get<nabla::common::RpcRequest>(parsed);
    check(request.params.is_object() || request.params.is_array());
    response = nabla::common::make_result(request.id.value_or(nullptr), request.params);
  }
  // What the server would send must itself be a parseable response.
  const std::string text = nabla::common::dump_json(response);
  const auto round = nabla::common::parse_response(text);
  check(round.id == response["id"]);
  try {
    (void)nabla::common::parse_response(payload);
  } catch (const nabla::common::RpcError&) {
    // Expected for most inputs.
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  // First byte: chunk size for feeding (1..256) and a small frame limit for
  // some inputs, so the oversize path is reachable with short inputs.
  const std::size_t chunk = static_cast<std::size_t>(data[0]) + 1;
  const std::size_t limit = (data[0] & 1) ? 64 : nabla::common::kMaxFrameBytes;
  const std::string_view input(reinterpret_cast<const char*>(data) + 1, size - 1);

  FrameDecoder decoder(limit);
  std::string frame;
  std::size_t consumed_frames = 0;
  for (std::size_t pos = 0; pos < input.size(); pos += chunk) {
    decoder.feed(input.substr(pos, chunk));
    for (;;) {
      const auto status = decoder.next(frame);
      if (status == FrameDecoder::Status::kNeedMore) break;
      if (status == FrameDecoder::Status::kOversize) {
        check(decoder.oversize_length() > limit);
        return 0;
      }
      check(frame.size() <= limit);
      ++consumed_frames;
      // Re-encoding and decoding a frame gives it back.
      FrameDecoder again(limit);
      again.feed(nabla::common::encode_frame(frame, limit));
      std::string copy;
      check(again.next(copy) == FrameDecoder::Status::kFrame && copy == frame);
      exercise_payload(frame);
    }
  }
  // The whole input as one unframed payload, too (parser fuzzing without the
  // 4-byte header getting in the way).
  if (consumed_frames == 0) exercise_payload(input);
  return 0;
}
