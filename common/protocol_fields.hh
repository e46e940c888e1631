#pragma once
// Reading one JSON object of a control message, field by field. Every error
// is a std::invalid_argument whose message starts with the field's path
// ("faults.loss.p: must be within 0 .. 1"), which the RPC server turns into
// error -32602; a client reading a result gets the same one line. Shared by
// the messages in protocol/injectd.hh and protocol/sniffd.hh, so every message reports a
// missing, mistyped or unknown field the same way.
#include <cstdint>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace nabla::common::protocol {

[[noreturn]] void bad_field(const std::string& path, const std::string& why);

// `path` + "." + `key`, or `key` at the top level (empty path).
std::string field_path(const std::string& path, const char* key);

class ObjectReader {
 public:
  // `where` names the object in errors; "" for a message's top level, whose
  // errors then name the bare field and whose own type error says "params".
  ObjectReader(const nlohmann::json& object, std::string where);

  const std::string& where() const { return where_; }
  std::string path(const char* key) const { return field_path(where_, key); }

  // The member, or nullptr when absent or null (null means "not given").
  const nlohmann::json* find(const char* key) const;
  const nlohmann::json& require(const char* key, const char* why = "required") const;
  // Throws "<path.key>: unknown field" for the first member not in `known`.
  void reject_unknown(std::initializer_list<const char*> known) const;

  std::string string(const char* key) const;
  bool boolean(const char* key) const;
  double number(const char* key) const;
  int64_t integer(const char* key) const;
  uint64_t unsigned_integer(const char* key, uint64_t max = UINT64_MAX) const;
  // An object member, read by its own reader.
  ObjectReader object(const char* key) const;

  // Defaults for optional members (absent or null).
  std::string string_or(const char* key, const std::string& fallback) const;
  bool boolean_or(const char* key, bool fallback) const;
  uint64_t unsigned_or(const char* key, uint64_t fallback) const;
  int64_t integer_or(const char* key, int64_t fallback) const;

 private:
  const nlohmann::json& object_;
  std::string where_;
};

// Non-negative integers arrive as signed or unsigned JSON numbers.
bool is_non_negative_integer(const nlohmann::json& value);

// Durations in params: a string with a unit ("20ms") or integer nanoseconds,
// within 0 .. max_ns. Probabilities: a number in [0, 1] or a percent string.
int64_t read_duration_ns(const nlohmann::json& value, const std::string& path, int64_t max_ns);
double read_probability(const nlohmann::json& value, const std::string& path);
double read_number_within(const nlohmann::json& value, const std::string& path, double lo,
                          double hi);

}  // namespace nabla::common::protocol
