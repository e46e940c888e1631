#include "charts.hh"

#include <cstdio>

namespace nabla::report::detail {

std::string short_number(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", v);
  return text;
}

json chart(const std::string& kind, const std::string& title, json spec) {
  return {{"kind", kind}, {"title", title}, {"spec", std::move(spec)}};
}

json channel(const std::string& field, const std::string& type, const std::string& title) {
  return {{"field", field}, {"type", type}, {"title", title}};
}

json number_channel(const std::string& field, const std::string& title) {
  json c = channel(field, "quantitative", title);
  c["format"] = ".4~g";
  return c;
}

json layered(json values, json layers, int width, int height) {
  return {{"width", width},
          {"height", height},
          {"data", {{"values", std::move(values)}}},
          {"layer", std::move(layers)}};
}

json estimate_with_ci_layers(const std::string& category, const std::string& category_title,
                             const std::string& value_title, const std::string& color) {
  const json y = channel(category, "nominal", category_title);
  json tooltip = json::array({channel(category, "nominal", category_title),
                              number_channel("value", value_title), number_channel("low", "CI low"),
                              number_channel("high", "CI high")});
  json bars{{"mark", {{"type", "rule"}, {"strokeWidth", 2}}},
            {"encoding",
             {{"y", y},
              {"x", channel("low", "quantitative", value_title)},
              {"x2", {{"field", "high"}}},
              {"tooltip", tooltip}}}};
  json points{
      {"mark", {{"type", "point"}, {"filled", true}, {"size", 70}}},
      {"encoding",
       {{"y", y}, {"x", channel("value", "quantitative", value_title)}, {"tooltip", tooltip}}}};
  if (!color.empty()) {
    bars["encoding"]["color"] = channel(color, "nominal", color);
    points["encoding"]["color"] = channel(color, "nominal", color);
    bars["encoding"]["yOffset"] = channel(color, "nominal", color);
    points["encoding"]["yOffset"] = channel(color, "nominal", color);
  }
  return json::array({bars, points});
}

}  // namespace nabla::report::detail
