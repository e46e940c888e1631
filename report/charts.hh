#pragma once
// Small builders of Vega-Lite specs for the report's charts. Every chart is
// an object {"kind", "title", "spec"}: `kind` names what it draws (the page
// marks its element with it, and the browser test counts them), `spec` is a
// Vega-Lite spec with its data inline.
#include <nlohmann/json.hpp>
#include <string>

namespace nabla::report::detail {

using nlohmann::json;

json chart(const std::string& kind, const std::string& title, json spec);

// An encoding channel: {"field", "type", "title"}.
json channel(const std::string& field, const std::string& type, const std::string& title);
// A quantitative channel with a tooltip-friendly number format.
json number_channel(const std::string& field, const std::string& title);

// {"width", "height", "data": {"values"}, "layer"} with the layers given.
json layered(json values, json layers, int width = 640, int height = 240);

// Point with CI error bars: one row per `category`, x from `value` with
// `low`..`high`, coloured by `color` when non-empty.
json estimate_with_ci_layers(const std::string& category, const std::string& category_title,
                             const std::string& value_title, const std::string& color);

// A number for a label: "50", "99.9", "4000" (printf %g).
std::string short_number(double v);

// ns -> ms and ns -> µs for axes (the stored values stay in ns in the data).
inline double ms(double ns) {
  return ns / 1e6;
}
inline double us(double ns) {
  return ns / 1e3;
}

}  // namespace nabla::report::detail
