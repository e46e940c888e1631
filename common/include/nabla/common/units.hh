#pragma once
// Parsing and printing of user-facing quantities. Inside nabla every duration
// is int64_t nanoseconds; these functions are the edges (CLI flags, TOML,
// JSON-RPC params, reports).
#include <cstdint>
#include <string>
#include <string_view>

namespace nabla::common {

// Parses a non-negative duration with a unit: "100ns", "250us", "20ms",
// "1.5s", "2m", "1h" (decimal fractions allowed, e.g. "0.25ms"). The only bare
// number accepted is "0": units are required so "20" is never misread as
// seconds vs. milliseconds. Throws std::invalid_argument naming the bad text
// and the accepted forms for junk, negatives, overflow (> ~292 years) and
// precision finer than 1 ns.
int64_t parse_duration_ns(std::string_view text);

// Prints a duration exactly in the largest unit that divides it readably:
// 1'500'000'000 -> "1.5s", 20'000'000 -> "20ms", 250'000 -> "250us",
// 120'000'000'000 -> "2m", 0 -> "0". parse_duration_ns(format_duration_ns(x))
// == x for every x >= 0. Negative values get a leading '-'.
std::string format_duration_ns(int64_t ns);

// A latency for people: "850ns", "12.3us", "1.02ms", "2.50s" (3 significant
// digits, no exponent; "-" when not finite). Every table and sentence that
// shows a measured latency uses it; JSON keeps nanoseconds.
std::string format_latency_ns(double ns);

// Parses a percentage "5%" -> 0.05, "0.5%" -> 0.005, within 0% .. 100%. The
// '%' sign is required. Throws std::invalid_argument naming the bad text.
double parse_percent(std::string_view text);

// Formats a double with `digits` significant digits ("-" for NaN).
std::string format_number(double value, int digits = 4);

}  // namespace nabla::common
