// libFuzzer target: the user-facing text parsers (link specs, durations,
// percentages). They must either return a value that round-trips through
// its canonical form or throw std::invalid_argument; nothing else.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <string_view>

#include "nabla/common/link_spec.hh"
#include "nabla/common/units.hh"

namespace {

void check(bool ok) {
  if (!ok) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    const auto spec = nabla::common::parse_link_spec(text);
    const std::string canonical = nabla::common::to_string(spec);
    check(nabla::common::parse_link_spec(canonical) == spec);
    check(nabla::common::to_string(nabla::common::parse_link_spec(canonical)) == canonical);
  } catch (const nabla::common::LinkSpecError& e) {
    check(e.column() >= 1 && e.column() <= text.size() + 1);
  }
  try {
    const int64_t ns = nabla::common::parse_duration_ns(text);
    check(ns >= 0);
    check(nabla::common::parse_duration_ns(nabla::common::format_duration_ns(ns)) == ns);
  } catch (const std::invalid_argument&) {
  }
  try {
    const double p = nabla::common::parse_percent(text);
    check(p >= 0.0 && p <= 1.0);
  } catch (const std::invalid_argument&) {
  }
  return 0;
}
