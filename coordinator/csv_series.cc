#include "nabla/coordinator/csv_series.hh"

#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string_view>
#include <unordered_map>

namespace nabla::coordinator {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

bool parse_int(std::string_view field, std::int64_t& out) {
  field = trim(field);
  if (field.empty()) return false;
  const char* end = field.data() + field.size();
  auto [ptr, ec] = std::from_chars(field.data(), end, out);
  return ec == std::errc() && ptr == end;
}

bool looks_numeric(std::string_view field) {
  field = trim(field);
  return !field.empty() && (std::isdigit(static_cast<unsigned char>(field.front())) ||
                            field.front() == '-' || field.front() == '+');
}

// The first line of `text`, which is advanced past it and its '\n'.
std::string_view next_line(std::string_view& text) {
  const std::size_t nl = text.find('\n');
  std::string_view line = text.substr(0, nl);
  text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
  return line;
}

constexpr const char* kTooManyColumns = "too many columns (expected t_ns,latency_ns[,type])";

// Up to 4 fields of one line: one more than a record may have, so that too
// many columns is an error.
struct Fields {
  std::string text[4];
  int count = 0;
};

// Reads the quoted field starting at `pos` (its opening quote) into
// `field`; `pos` ends at the comma after it or the end of the line.
void read_quoted(std::string_view line, std::size_t& pos, std::string& field,
                 const std::string& name, std::size_t line_no) {
  ++pos;
  bool closed = false;
  while (pos < line.size()) {
    if (line[pos] == '"') {
      if (pos + 1 < line.size() && line[pos + 1] == '"') {
        field += '"';
        pos += 2;
        continue;
      }
      ++pos;
      closed = true;
      break;
    }
    field += line[pos++];
  }
  if (!closed) throw CsvError(name, line_no, "unterminated quoted field");
  while (pos < line.size() && (line[pos] == ' ' || line[pos] == '\t')) ++pos;
  if (pos < line.size() && line[pos] != ',') {
    throw CsvError(name, line_no, "text after a quoted field");
  }
}

// Fields split on commas; a field may be quoted ("a,b", "say ""hi""")
// as RFC 4180 writes it, so type names may hold commas and quotes.
Fields split_fields(std::string_view line, const std::string& name, std::size_t line_no) {
  Fields fields;
  std::size_t pos = 0;
  while (true) {
    if (fields.count == 4) throw CsvError(name, line_no, kTooManyColumns);
    std::string& field = fields.text[fields.count++];
    while (pos < line.size() && (line[pos] == ' ' || line[pos] == '\t')) ++pos;
    if (pos < line.size() && line[pos] == '"') {
      read_quoted(line, pos, field, name, line_no);
    } else {
      const std::size_t comma = line.find(',', pos);
      field = std::string(trim(line.substr(
          pos, comma == std::string_view::npos ? std::string_view::npos : comma - pos)));
      pos = comma == std::string_view::npos ? line.size() : comma;
    }
    if (pos >= line.size()) break;
    ++pos;  // the comma
  }
  if (fields.count > 3) throw CsvError(name, line_no, kTooManyColumns);
  return fields;
}

void check_header(const Fields& f, std::string_view line, const std::string& name,
                  std::size_t line_no) {
  const int n = f.count;
  const bool ok =
      n >= 2 && f.text[0] == "t_ns" && f.text[1] == "latency_ns" && (n == 2 || f.text[2] == "type");
  if (!ok) {
    throw CsvError(name, line_no,
                   "header must be 't_ns,latency_ns' or 't_ns,latency_ns,type', got '" +
                       std::string(line) + "'");
  }
}

// The series being read: what the records so far have set.
struct SeriesBuilder {
  CsvSeries out;
  std::unordered_map<std::string, std::int32_t> type_ids;
  int columns = 0;  // 2 or 3 once known

  void add_record(const Fields& f, const std::string& name, std::size_t line_no) {
    const int n = f.count;
    if (n < 2) throw CsvError(name, line_no, "expected at least 2 columns (t_ns,latency_ns)");
    if (columns == 0) columns = n;
    if (n != columns) {
      throw CsvError(name, line_no,
                     "expected " + std::to_string(columns) +
                         " columns like the first record, got " + std::to_string(n));
    }
    std::int64_t t = 0;
    std::int64_t latency = 0;
    if (!parse_int(f.text[0], t)) {
      throw CsvError(name, line_no, "t_ns '" + std::string(f.text[0]) + "' is not an integer");
    }
    if (!parse_int(f.text[1], latency)) {
      throw CsvError(name, line_no,
                     "latency_ns '" + std::string(f.text[1]) + "' is not an integer");
    }
    if (latency < 0) {
      throw CsvError(name, line_no, "latency_ns is negative (" + std::to_string(latency) + ")");
    }
    std::string type_name = n == 3 ? f.text[2] : std::string("all");
    if (type_name.empty()) throw CsvError(name, line_no, "type is empty");
    auto [it, inserted] =
        type_ids.try_emplace(type_name, static_cast<std::int32_t>(out.type_names.size()));
    if (inserted) out.type_names.push_back(type_name);
    out.t_ns.push_back(t);
    out.latency_ns.push_back(latency);
    out.type.push_back(it->second);
  }
};

}  // namespace

CsvError::CsvError(const std::string& file, std::size_t line, const std::string& what)
    : std::runtime_error(file + ":" + std::to_string(line) + ": " + what), line_(line) {}

CsvSeries parse_csv_series(std::string_view text, const std::string& name) {
  SeriesBuilder series;
  std::size_t line_no = 0;
  bool first_content_line = true;
  while (!text.empty()) {
    const std::string_view line = trim(next_line(text));
    ++line_no;
    if (line.empty() || line.front() == '#') continue;
    const Fields fields = split_fields(line, name, line_no);
    if (first_content_line) {
      first_content_line = false;
      if (!looks_numeric(fields.text[0])) {
        check_header(fields, line, name, line_no);
        series.columns = fields.count;
        continue;
      }
    }
    series.add_record(fields, name, line_no);
  }
  CsvSeries& out = series.out;
  out.has_type_column = series.columns == 3;
  if (out.size() == 0) throw CsvError(name, line_no, "no records");
  return std::move(out);
}

CsvSeries read_csv_series(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw std::runtime_error("cannot read '" + path + "': " + std::strerror(errno));
  }
  std::ostringstream buffer;
  buffer << in.rdbuf();
  const std::string text = std::move(buffer).str();
  return parse_csv_series(text, path);
}

}  // namespace nabla::coordinator
