#pragma once
// The fault vocabulary: delay, faults and waveform in iproute2's (tc netem's)
// units and words, as `nabla inject` takes them as flags and a campaign's
// [[experiment]] tables as keys (the key is the flag without its dashes,
// with '_' for '-'), and the pure parsers behind them. Every parser throws
// std::invalid_argument whose one line starts with the flag and says the
// accepted form ("--rate: bad rate '10mb'; use a number with a unit:
// bit kbit mbit gbit tbit (x1000), kibit mibit ... (x1024), bps kbps mbps ...
// (bytes/s)"), which the CLI reports as a usage error (exit 2).
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "nabla/common/protocol/injectd.hh"

namespace nabla::common {

struct FaultFlags {
  std::optional<std::string> delay;          // e.g. "20ms": the delay (its amplitude with a wave)
  std::optional<std::string> wave;           // square:P[,DUTY] | sine:P | trace:FILE[,...]
  std::optional<std::string> square_period;  // synonym of --wave square:P (with --duty)
  double duty = 0.5;
  std::optional<std::string> jitter;  // e.g. "1ms"
  std::optional<std::string> jitter_distribution;
  std::optional<std::string> jitter_correlation;  // e.g. "25%"
  std::optional<std::string> loss;                // "5%" | "gemodel:P[,R[,1-H[,1-K]]]"
  std::optional<std::string> reorder;             // e.g. "10%"
  std::optional<int64_t> reorder_gap;
  std::optional<std::string> corrupt;  // e.g. "0.1%"
  bool corrupt_fix_checksum = false;
  std::optional<std::string> duplicate;  // e.g. "1%"
  std::optional<std::string> rate;       // e.g. "10mbit"
  std::optional<std::string> burst;      // e.g. "32kb"
  bool partition = false;
};

// A rate in iproute2's units, as bits per second: bit, kbit, mbit, gbit,
// tbit (powers of 1000), kibit, mibit, gibit, tibit (powers of 1024), bps,
// kbps, mbps, gbps, tbps (bytes per second, powers of 1000), kibps, mibps,
// gibps, tibps; case-insensitive. A unit is required.
double parse_rate_bps(std::string_view text);

// A size in iproute2's units, as bytes: b or a bare number (bytes), k or kb
// (1024), m or mb (1024^2), g or gb (1024^3), kbit, mbit, gbit (1024^n / 8).
int64_t parse_size_bytes(std::string_view text);

// --loss: "P%" (Bernoulli) or "gemodel:P[,R[,1-H[,1-K]]]", each a
// percentage with netem's meaning (P: good -> bad, R: bad -> good, 1-H: loss
// in the bad state, 1-K: loss in the good state; defaults R 100%, 1-H 100%,
// 1-K 0%).
protocol::LossFault parse_loss_flag(std::string_view text);

// --wave, as written: the shape without its amplitude, and for a trace the
// file to read.
struct WaveFlag {
  protocol::WaveKind kind = protocol::WaveKind::kSquare;
  int64_t period_ns = 0;
  double duty = 0.5;
  std::string trace_file;
  bool trace_loop = true;
  protocol::TraceInterpolation interpolation = protocol::TraceInterpolation::kLinear;
};

// "square:PERIOD[,DUTY]" | "sine:PERIOD" | "trace:FILE[,loop|once][,linear|step]".
WaveFlag parse_wave_flag(std::string_view text);

// A trace file: one "t_offset,value" row per line. t_offset is a duration
// with a unit ("250ms") or a bare number of seconds, relative to the first
// row, strictly increasing; value is the level, a fraction 0 .. 1 of each
// fault's magnitude (of the delay: --delay 10ms and 0.5 is 5 ms). Blank
// lines and lines starting with '#' are skipped, and so is a first row that
// starts with a letter (a header). 2 .. kMaxTracePoints rows, at most an hour
// long. Errors name the line.
std::vector<protocol::TracePoint> parse_trace_csv(std::string_view csv);

// The delay wave and the faults the flags ask for. `read_file` reads a
// trace file (the command passes a reader of the file system; tests pass
// text). Throws std::invalid_argument naming the flag.
struct FaultRequest {
  std::optional<protocol::Wave> delay;
  protocol::Faults faults;
};
using FileReader = std::function<std::string(const std::string& path)>;
FaultRequest build_fault_request(const FaultFlags& flags, const FileReader& read_file);

// The whole file, or std::invalid_argument "--wave: cannot read PATH".
std::string read_trace_file(const std::string& path);

}  // namespace nabla::common
