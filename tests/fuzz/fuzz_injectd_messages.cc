// libFuzzer target: the injector's control messages as nabla-injectd reads
// them from the network after authentication (params of every method, with
// their waves, faults and trace points). Each reader must either return a
// value whose JSON reads back to the same value, or throw
// std::invalid_argument (a malformed message); nothing else.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string_view>

#include "nabla/common/protocol/injectd.hh"

namespace {

namespace protocol = nabla::common::protocol;

void check(bool ok) {
  if (!ok) std::abort();
}

// Reads `params` with T::from_json; a value read must survive its own
// to_json.
template <typename T>
void read_back(const nlohmann::json& params) {
  try {
    const T value = T::from_json(params);
    const nlohmann::json again = value.to_json();
    check(T::from_json(again).to_json() == again);
  } catch (const std::invalid_argument&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const nlohmann::json params = nlohmann::json::parse(text, nullptr, false);
  if (params.is_discarded()) return 0;
  read_back<protocol::InjectStartParams>(params);
  read_back<protocol::InjectUpdateParams>(params);
  read_back<protocol::InjectStopParams>(params);
  read_back<protocol::InjectStatsParams>(params);
  read_back<protocol::LeaseRenewParams>(params);
  try {
    const protocol::Wave wave = protocol::Wave::from_json(params, "wave");
    check(protocol::Wave::from_json(wave.to_json(), "wave") == wave);
  } catch (const std::invalid_argument&) {
  }
  try {
    (void)protocol::Faults::from_json(params);
  } catch (const std::invalid_argument&) {
  }
  try {
    (void)protocol::read_lease_s(params);
  } catch (const std::invalid_argument&) {
  }
  return 0;
}
