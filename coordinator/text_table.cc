#include "nabla/coordinator/text_table.hh"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>

namespace nabla::coordinator {
namespace {

bool is_numeric_cell(const std::string& s) {
  if (s.empty()) return false;
  const char c = s.front();
  return std::isdigit(static_cast<unsigned char>(c)) || c == '-' || c == '+' || c == '.';
}

}  // namespace

void TextTable::print(std::ostream& out) const {
  std::vector<std::size_t> width(header_.size(), 0);
  for (std::size_t i = 0; i < header_.size(); ++i) width[i] = header_[i].size();
  for (const auto& row : rows_) {
    for (std::size_t i = 0; i < row.size() && i < width.size(); ++i) {
      width[i] = std::max(width[i], row[i].size());
    }
  }
  auto emit = [&](const std::vector<std::string>& row, bool header) {
    for (std::size_t i = 0; i < width.size(); ++i) {
      const std::string cell = i < row.size() ? row[i] : "";
      const std::size_t pad = width[i] - std::min(width[i], cell.size());
      const bool right = !header && is_numeric_cell(cell);
      if (i > 0) out << "  ";
      if (right)
        out << std::string(pad, ' ') << cell;
      else if (i + 1 < width.size())
        out << cell << std::string(pad, ' ');
      else
        out << cell;
    }
    out << '\n';
  };
  emit(header_, true);
  std::size_t total = 0;
  for (std::size_t w : width) total += w;
  total += 2 * (width.empty() ? 0 : width.size() - 1);
  out << std::string(total, '-') << '\n';
  for (const auto& row : rows_) emit(row, false);
}

std::string csv_field(std::string_view text) {
  if (text.find_first_of(",\"\n\r") == std::string_view::npos) return std::string(text);
  std::string quoted = "\"";
  for (char c : text) {
    if (c == '"') quoted += '"';
    quoted += c;
  }
  return quoted + "\"";
}

}  // namespace nabla::coordinator
