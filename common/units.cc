#include "nabla/common/units.hh"

#include <array>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>
#include <stdexcept>

namespace nabla::common {
namespace {

constexpr int64_t kNsPerUs = 1'000;
constexpr int64_t kNsPerMs = 1'000'000;
constexpr int64_t kNsPerS = 1'000'000'000;
constexpr int64_t kNsPerMin = 60 * kNsPerS;
constexpr int64_t kNsPerHour = 60 * kNsPerMin;

constexpr std::string_view kDurationForms =
    "expected a non-negative number with a unit: ns, us, ms, s, m or h "
    "(e.g. 250us, 20ms, 1.5s, 2m), or 0";

struct Unit {
  std::string_view suffix;
  int64_t ns;
};

// Longest suffixes first so "ms" is not read as "m" + junk.
constexpr std::array<Unit, 6> kUnits{{{"ns", 1},
                                      {"us", kNsPerUs},
                                      {"ms", kNsPerMs},
                                      {"s", kNsPerS},
                                      {"m", kNsPerMin},
                                      {"h", kNsPerHour}}};

[[noreturn]] void bad_duration(std::string_view text, std::string_view why) {
  throw std::invalid_argument("bad duration '" + std::string(text) + "': " + std::string(why) +
                              "; " + std::string(kDurationForms));
}

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

}  // namespace

int64_t parse_duration_ns(std::string_view text) {
  if (text == "0") return 0;
  if (text.empty()) bad_duration(text, "empty");
  if (text.front() == '-') bad_duration(text, "negative durations are not allowed");

  // Split the number from the unit at the first character that is neither a
  // digit nor '.'.
  std::size_t split = 0;
  while (split < text.size() && (is_digit(text[split]) || text[split] == '.')) ++split;
  const std::string_view number = text.substr(0, split);
  const std::string_view suffix = text.substr(split);
  if (number.empty()) bad_duration(text, "no number");
  if (suffix.empty()) bad_duration(text, "missing unit");

  const Unit* unit = nullptr;
  for (const Unit& u : kUnits) {
    if (u.suffix == suffix) unit = &u;
  }
  if (unit == nullptr) bad_duration(text, "unknown unit '" + std::string(suffix) + "'");

  const std::size_t dot = number.find('.');
  const std::string_view whole = number.substr(0, dot);
  const std::string_view frac = dot == std::string_view::npos ? "" : number.substr(dot + 1);
  if (frac.find('.') != std::string_view::npos) bad_duration(text, "more than one '.'");
  if (whole.empty() || (dot != std::string_view::npos && frac.empty())) {
    bad_duration(text, "a '.' needs digits on both sides");
  }

  int64_t whole_value = 0;
  const auto [wend, werr] = std::from_chars(whole.data(), whole.data() + whole.size(), whole_value);
  if (werr != std::errc() || wend != whole.data() + whole.size()) bad_duration(text, "too large");

  int64_t total = 0;
  if (__builtin_mul_overflow(whole_value, unit->ns, &total)) bad_duration(text, "too large");

  // Fraction: digit i is worth unit/10^(i+1); each must land on a whole ns.
  int64_t place = unit->ns;
  for (const char c : frac) {
    const int digit = c - '0';
    if (place % 10 != 0) {
      if (digit != 0) bad_duration(text, "finer than 1ns");
      continue;
    }
    place /= 10;
    if (__builtin_add_overflow(total, digit * place, &total)) bad_duration(text, "too large");
  }
  return total;
}

std::string format_duration_ns(int64_t ns) {
  if (ns == 0) return "0";
  if (ns < 0) {
    // -INT64_MIN overflows; format it via unsigned arithmetic on the magnitude.
    if (ns == std::numeric_limits<int64_t>::min()) return "-9223372036.854775808s";
    return "-" + format_duration_ns(-ns);
  }
  // Whole minutes and hours read best as such; otherwise the largest of
  // s/ms/us/ns not exceeding the value, with an exact decimal fraction.
  if (ns % kNsPerHour == 0) return std::to_string(ns / kNsPerHour) + "h";
  if (ns % kNsPerMin == 0) return std::to_string(ns / kNsPerMin) + "m";
  const Unit* unit = &kUnits[0];
  for (std::size_t i = 0; i < 4; ++i) {
    if (ns >= kUnits[i].ns) unit = &kUnits[i];
  }
  std::string out = std::to_string(ns / unit->ns);
  int64_t rem = ns % unit->ns;
  if (rem != 0) {
    std::string digits;
    for (int64_t place = unit->ns / 10; place >= 1; place /= 10) {
      digits.push_back(static_cast<char>('0' + rem / place));
      rem %= place;
    }
    while (!digits.empty() && digits.back() == '0') digits.pop_back();
    out += "." + digits;
  }
  return out + std::string(unit->suffix);
}

double parse_percent(std::string_view text) {
  const auto fail = [&](std::string_view why) -> double {
    throw std::invalid_argument("bad percentage '" + std::string(text) + "': " + std::string(why) +
                                "; expected a number from 0% to 100% with a '%' sign (e.g. 5%, "
                                "0.5%)");
  };
  if (text.empty() || text.back() != '%') return fail("missing '%'");
  const std::string_view number = text.substr(0, text.size() - 1);
  if (number.empty()) return fail("no number");
  int dots = 0;
  for (const char c : number) {
    if (c == '.') {
      ++dots;
    } else if (c == '-') {
      return fail("negative");
    } else if (!is_digit(c)) {
      return fail("not a plain decimal number");
    }
  }
  if (dots > 1 || number.front() == '.' || number.back() == '.') {
    return fail("not a plain decimal number");
  }
  double value = 0;
  const auto [end, err] = std::from_chars(number.data(), number.data() + number.size(), value);
  if (err != std::errc() || end != number.data() + number.size()) return fail("not a number");
  if (!(value >= 0.0 && value <= 100.0)) return fail("out of range");
  return value / 100.0;
}

namespace {

std::string fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

// 3 significant digits without exponent notation.
std::string significant(double v) {
  const double a = std::fabs(v);
  return fixed(v, a >= 100 ? 0 : a >= 10 ? 1 : 2);
}

}  // namespace

std::string format_latency_ns(double ns) {
  if (!std::isfinite(ns)) return "-";
  const double a = std::fabs(ns);
  if (a < 1e3) return fixed(ns, 0) + "ns";
  if (a < 1e6) return significant(ns / 1e3) + "us";
  if (a < 1e9) return significant(ns / 1e6) + "ms";
  return significant(ns / 1e9) + "s";
}

std::string format_number(double value, int digits) {
  if (std::isnan(value)) return "-";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*g", digits, value);
  return buf;
}

}  // namespace nabla::common
