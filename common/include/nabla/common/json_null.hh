#pragma once
// JSON null for what is not known, the same way in every JSON nabla prints:
// an empty optional, or a floating-point number that is not finite (NaN or
// infinite, which JSON cannot hold). `Json` picks the document type
// (nlohmann::json, or ordered_json where key order is kept for the reader).
#include <cmath>
#include <concepts>
#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>

namespace nabla::common {

// v, or null when it is not finite.
template <typename Json = nlohmann::json, std::floating_point F>
Json or_null(F v) {
  return std::isfinite(v) ? Json(v) : Json(nullptr);
}

// *v, or null when empty (or a floating-point value that is not finite).
template <typename Json = nlohmann::json, typename T>
Json or_null(const std::optional<T>& v) {
  if (!v) return Json(nullptr);
  if constexpr (std::floating_point<T>) return or_null<Json>(*v);
  return Json(*v);
}

// The document `text` holds, or null when it is not JSON (a stored column
// written by an older build, say).
template <typename Json = nlohmann::json>
Json parsed_or_null(std::string_view text) {
  Json parsed = Json::parse(text, nullptr, false);
  return parsed.is_discarded() ? Json(nullptr) : parsed;
}

}  // namespace nabla::common
