// libFuzzer target: arbitrary bytes through the control protocol's pure
// parsing layer, exactly as the server sees them: FrameDecoder (fed in
// chunks whose sizes come from the input), then parse_request on every
// frame, then the response the server would serialise. Also parse_response
// (the client side). The same bytes then go through the sealed framing of
// an authenticated session (rpc_session.hh) under a fixed session key: the
// decoder in sealed mode and FrameSealer::open, which must refuse anything
// but a frame with the right MAC and sequence number and leave its state
// alone when it does. Invariants are checked with abort() so libFuzzer
// reports them as crashes.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "nabla/common/json_rpc.hh"
#include "nabla/common/rpc_frame.hh"
#include "nabla/common/rpc_session.hh"

namespace {

using nabla::common::FrameDecoder;
using nabla::common::FrameSealer;
using nlohmann::json;
using Verdict = FrameSealer::Verdict;

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

// The session of the seeds: key 32 x 0x42, server nonce 32 x 0x01, client
// nonce 32 x 0x02, empty identity (tests/fuzz/corpus/rpc_frame/sealed_*).
nabla::common::Key session_key() {
  nabla::common::Nonce server_nonce{};
  nabla::common::Nonce client_nonce{};
  server_nonce.fill(0x01);
  client_nonce.fill(0x02);
  return nabla::common::derive_session_key(nabla::common::Key(std::vector<uint8_t>(32, 0x42)),
                                           server_nonce, client_nonce, "");
}

// What an honest client seals round-trips, and one flipped byte is refused.
void check_seal_round_trip(const std::string& payload, std::size_t limit, std::size_t flip_at) {
  FrameSealer sender(session_key(), FrameSealer::Peer::kClient);
  FrameSealer receiver(session_key(), FrameSealer::Peer::kServer);
  FrameDecoder decoder(limit);
  decoder.expect_sealed();
  decoder.feed(sender.seal(payload, limit));
  std::string body;
  std::string opened;
  check(decoder.next(body) == FrameDecoder::Status::kFrame);
  std::string flipped = body;
  flipped[flip_at % flipped.size()] ^= 0x01;
  check(receiver.open(flipped, opened) != Verdict::kOk);
  check(receiver.open(body, opened) == Verdict::kOk && opened == payload);
  check(receiver.open(body, opened) == Verdict::kOutOfOrder);  // a replay
}

// Feeds `input` in chunks of `chunk` bytes and calls on_frame(frame) for
// every frame; false when an oversize header ended the stream.
template <typename OnFrame>
bool for_each_frame(FrameDecoder& decoder, std::string_view input, std::size_t chunk,
                    std::size_t limit, OnFrame on_frame) {
  std::string frame;
  for (std::size_t pos = 0; pos < input.size(); pos += chunk) {
    decoder.feed(input.substr(pos, chunk));
    for (;;) {
      const auto status = decoder.next(frame);
      if (status == FrameDecoder::Status::kNeedMore) break;
      if (status == FrameDecoder::Status::kOversize) {
        check(decoder.oversize_length() > limit);
        return false;
      }
      on_frame(frame);
    }
  }
  return true;
}

void exercise_sealed(std::string_view input, std::size_t chunk, std::size_t limit) {
  FrameDecoder decoder(limit);
  decoder.expect_sealed();
  FrameSealer server(session_key(), FrameSealer::Peer::kServer);
  std::string payload;
  for_each_frame(decoder, input, chunk, limit, [&](const std::string& frame) {
    check(frame.size() >= nabla::common::kSealOverheadBytes &&
          frame.size() - nabla::common::kSealOverheadBytes <= limit);
    const uint64_t before = server.next_receive_seq();
    if (server.open(frame, payload) == Verdict::kOk) {
      check(payload.size() + nabla::common::kSealOverheadBytes == frame.size());
      check(server.next_receive_seq() == before + 1);
      exercise_payload(payload);
    } else {
      check(server.next_receive_seq() == before);
    }
    check_seal_round_trip(frame.substr(0, std::min(frame.size(), limit)), limit, before + chunk);
  });
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  // First byte: chunk size for feeding (1..256) and a small frame limit for
  // some inputs, so the oversize path is reachable with short inputs.
  const std::size_t chunk = static_cast<std::size_t>(data[0]) + 1;
  const std::size_t limit = (data[0] & 1) ? 64 : nabla::common::kMaxFrameBytes;
  const std::string_view input(reinterpret_cast<const char*>(data) + 1, size - 1);

  exercise_sealed(input, chunk, limit);

  FrameDecoder decoder(limit);
  std::size_t consumed_frames = 0;
  const bool whole = for_each_frame(decoder, input, chunk, limit, [&](const std::string& frame) {
    check(frame.size() <= limit);
    ++consumed_frames;
    // Re-encoding and decoding a frame gives it back.
    FrameDecoder again(limit);
    again.feed(nabla::common::encode_frame(frame, limit));
    std::string copy;
    check(again.next(copy) == FrameDecoder::Status::kFrame && copy == frame);
    exercise_payload(frame);
  });
  if (!whole) return 0;
  // The whole input as one unframed payload, too (parser fuzzing without the
  // 4-byte header getting in the way).
  if (consumed_frames == 0) exercise_payload(input);
  return 0;
}
