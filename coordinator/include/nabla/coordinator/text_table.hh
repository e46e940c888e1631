#pragma once
// Plain-text tables for the terminal: columns padded to their widest cell,
// numbers right-aligned, a rule under the header. And the other shapes a
// command prints rows in.
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "nabla/common/units.hh"

namespace nabla::coordinator {

// How a command prints rows: a TextTable, JSON, or CSV (RFC 4180).
enum class OutputFormat { kTable, kJson, kCsv };

class TextTable {
 public:
  explicit TextTable(std::vector<std::string> header) : header_(std::move(header)) {}
  void add_row(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  bool empty() const { return rows_.empty(); }
  void print(std::ostream& out) const;

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
};

using common::format_number;

// One CSV field (RFC 4180): quoted, with inner quotes doubled, only when it
// holds a comma, a quote or a line break.
std::string csv_field(std::string_view text);

}  // namespace nabla::coordinator
