#pragma once
// Graphviz, shared by `nabla discover --dot` (DOT text) and `nabla report`
// (its link graph laid out by `dot`, docs/report.md).
#include <stdexcept>
#include <string>
#include <string_view>

namespace nabla::common {

// A DOT string literal: "…" with '"' and '\' escaped, newlines as "\n".
std::string dot_quote(std::string_view text);

// `dot` is not on PATH; what() says which package provides it.
class GraphvizMissing : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Lays out a DOT graph with `dot -Tsvg` and returns the SVG from its <svg>
// element on (no XML prolog, so it can be placed in an HTML page). Throws
// GraphvizMissing without `dot`, std::runtime_error when dot fails.
std::string dot_to_svg(const std::string& dot_text);

}  // namespace nabla::common
