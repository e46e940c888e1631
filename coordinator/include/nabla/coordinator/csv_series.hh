#pragma once
// Reading latency series from CSV files for `nabla analyze`.
//
// Format: one record per line, `t_ns,latency_ns[,type]`, integers in
// nanoseconds; `type` is any text (a URL, a transaction name), quoted as in
// RFC 4180 when it holds a comma or a quote ("a,b", "say ""hi"""), and
// defaults to "all" when the column is absent. A first line whose first
// field is not a number is a header and must name the columns
// `t_ns,latency_ns[,type]`. Blank lines and lines starting with '#' are
// skipped; CRLF line ends are accepted. Anything else is an error naming the
// file, the line number and what was wrong.
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace nabla::coordinator {

struct CsvSeries {
  std::vector<std::int64_t> t_ns;
  std::vector<std::int64_t> latency_ns;
  std::vector<std::int32_t> type;       // index into type_names
  std::vector<std::string> type_names;  // in order of first appearance
  bool has_type_column = false;
  std::size_t size() const { return t_ns.size(); }
};

class CsvError : public std::runtime_error {
 public:
  CsvError(const std::string& file, std::size_t line, const std::string& what);
  std::size_t line() const { return line_; }

 private:
  std::size_t line_;
};

// Parses CSV text; `name` is used in error messages.
CsvSeries parse_csv_series(std::string_view text, const std::string& name);

// Reads and parses a file; an unreadable file is an error naming it.
CsvSeries read_csv_series(const std::string& path);

}  // namespace nabla::coordinator
