// libFuzzer target: what crosses between a coordinator and a load agent
// (nabla-loadd). The agent reads the params of its methods and the workload
// inside load.start; the coordinator reads each agent's results, round
// summary (counts, histograms, checks) and sample pages. Neither end may
// trust the other's bytes: each reader must either return a value whose JSON
// reads back to the same JSON, or throw std::invalid_argument; nothing else.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string_view>
#include <vector>

#include "nabla/loadd/protocol.hh"
#include "nabla/loadgen/wire.hh"

namespace {

namespace protocol = nabla::loadd::protocol;
namespace loadgen = nabla::loadgen;

void check(bool ok) {
  if (!ok) std::abort();
}

template <typename T>
void read_back(const nlohmann::json& params) {
  try {
    const T value = T::from_json(params);
    const nlohmann::json again = value.to_json();
    check(T::from_json(again).to_json() == again);
  } catch (const std::invalid_argument&) {
  }
}

// `read` then `write` twice must give the same JSON the second time.
template <typename Read, typename Write>
void codec(const nlohmann::json& j, Read read, Write write) {
  try {
    const nlohmann::json once = write(read(j));
    check(write(read(once)) == once);
  } catch (const std::invalid_argument&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded()) return 0;
  read_back<protocol::LoadStartParams>(j);
  read_back<protocol::LoadStatusParams>(j);
  read_back<protocol::LoadResultParams>(j);
  read_back<protocol::LoadStopParams>(j);
  read_back<protocol::LoadSamplesParams>(j);
  read_back<protocol::LoadStatusResult>(j);
  read_back<protocol::LoadResultResult>(j);
  read_back<protocol::LoadSamplesResult>(j);
  codec(j, loadgen::engine_config_from_json, loadgen::engine_config_to_json);
  codec(j, loadgen::histogram_from_json, loadgen::histogram_to_json);
  codec(j, loadgen::round_summary_from_json, [](const loadgen::RoundSummary& s) {
    return loadgen::round_summary_to_json(s.result, s.check);
  });
  codec(j, loadgen::samples_from_json,
        [](const std::vector<loadgen::Sample>& s) { return loadgen::samples_to_json(s); });
  return 0;
}
