#pragma once
// Plain-text tables for the terminal: columns padded to their widest cell,
// numbers right-aligned, a rule under the header.
#include <ostream>
#include <string>
#include <vector>

#include "nabla/common/units.hh"

namespace nabla::coordinator {

class TextTable {
 public:
  explicit TextTable(std::vector<std::string> header) : header_(std::move(header)) {}
  void add_row(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  void print(std::ostream& out) const;

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
};

using common::format_number;

}  // namespace nabla::coordinator
