// Field readers of the control messages; see protocol_fields.hh.
#include "protocol_fields.hh"

#include <stdexcept>

#include "nabla/common/protocol/no_params.hh"
#include "nabla/common/units.hh"

namespace nabla::common::protocol {

using nlohmann::json;

void bad_field(const std::string& path, const std::string& why) {
  throw std::invalid_argument(path + ": " + why);
}

std::string field_path(const std::string& path, const char* key) {
  return path.empty() ? std::string(key) : path + "." + key;
}

bool is_non_negative_integer(const json& value) {
  return value.is_number_unsigned() || (value.is_number_integer() && value.get<int64_t>() >= 0);
}

ObjectReader::ObjectReader(const json& object, std::string where)
    : object_(object), where_(std::move(where)) {
  if (!object_.is_object()) bad_field(where_.empty() ? "params" : where_, "must be an object");
}

const json* ObjectReader::find(const char* key) const {
  auto it = object_.find(key);
  return it == object_.end() || it->is_null() ? nullptr : &*it;
}

const json& ObjectReader::require(const char* key, const char* why) const {
  const json* value = find(key);
  if (value == nullptr) bad_field(path(key), why);
  return *value;
}

void ObjectReader::reject_unknown(std::initializer_list<const char*> known) const {
  for (auto it = object_.begin(); it != object_.end(); ++it) {
    bool ok = false;
    for (const char* k : known) ok = ok || it.key() == k;
    if (!ok) bad_field(field_path(where_, it.key().c_str()), "unknown field");
  }
}

std::string ObjectReader::string(const char* key) const {
  const json& v = require(key);
  if (!v.is_string()) bad_field(path(key), "must be a string");
  return v.get<std::string>();
}

bool ObjectReader::boolean(const char* key) const {
  const json& v = require(key);
  if (!v.is_boolean()) bad_field(path(key), "must be true or false");
  return v.get<bool>();
}

double ObjectReader::number(const char* key) const {
  const json& v = require(key);
  if (!v.is_number()) bad_field(path(key), "must be a number");
  return v.get<double>();
}

int64_t ObjectReader::integer(const char* key) const {
  const json& v = require(key);
  if (!v.is_number_integer() || (v.is_number_unsigned() && v.get<uint64_t>() > INT64_MAX)) {
    bad_field(path(key), "must be an integer");
  }
  return v.get<int64_t>();
}

uint64_t ObjectReader::unsigned_integer(const char* key, uint64_t max) const {
  const json& v = require(key);
  if (!is_non_negative_integer(v)) bad_field(path(key), "must be an integer >= 0");
  const uint64_t n = v.get<uint64_t>();
  if (n > max) bad_field(path(key), "must be <= " + std::to_string(max));
  return n;
}

ObjectReader ObjectReader::object(const char* key) const {
  return ObjectReader(require(key), path(key));
}

std::string ObjectReader::string_or(const char* key, const std::string& fallback) const {
  return find(key) == nullptr ? fallback : string(key);
}

bool ObjectReader::boolean_or(const char* key, bool fallback) const {
  return find(key) == nullptr ? fallback : boolean(key);
}

uint64_t ObjectReader::unsigned_or(const char* key, uint64_t fallback) const {
  return find(key) == nullptr ? fallback : unsigned_integer(key);
}

int64_t ObjectReader::integer_or(const char* key, int64_t fallback) const {
  return find(key) == nullptr ? fallback : integer(key);
}

void require_no_params(const json& params, const char* method) {
  if (!params.is_null() && !(params.is_object() && params.empty())) {
    bad_field("params", std::string(method) + " takes none");
  }
}

namespace {

// A value people may type as text with a unit ("20ms", "5%") or give as a
// plain number: `parse` reads the text, `is_plain` accepts the number, and
// either way a bad value is one error naming `path`.
template <class T, class Parse>
T read_text_or_number(const json& value, const std::string& path, Parse parse, bool is_plain,
                      const char* expected) {
  if (value.is_string()) {
    try {
      return parse(value.get<std::string>());
    } catch (const std::invalid_argument& e) {
      bad_field(path, e.what());
    }
  }
  if (!is_plain) bad_field(path, expected);
  return value.get<T>();
}

}  // namespace

int64_t read_duration_ns(const json& value, const std::string& path, int64_t max_ns) {
  const auto ns = read_text_or_number<int64_t>(
      value, path, [](const std::string& t) { return parse_duration_ns(t); },
      value.is_number_integer(), "must be a duration string like \"20ms\" or integer nanoseconds");
  if (ns < 0 || ns > max_ns) bad_field(path, "must be within 0 .. " + format_duration_ns(max_ns));
  return ns;
}

double read_probability(const json& value, const std::string& path) {
  const auto p = read_text_or_number<double>(
      value, path, [](const std::string& t) { return parse_percent(t); }, value.is_number(),
      "must be a number in [0, 1] or a percent string like \"5%\"");
  if (!(p >= 0.0 && p <= 1.0)) bad_field(path, "must be within 0 .. 1");
  return p;
}

double read_number_within(const json& value, const std::string& path, double lo, double hi) {
  if (!value.is_number()) bad_field(path, "must be a number");
  const double x = value.get<double>();
  if (!(x >= lo && x <= hi)) {
    bad_field(path, "must be within " + std::to_string(lo) + " .. " + std::to_string(hi));
  }
  return x;
}

}  // namespace nabla::common::protocol
