// The fault vocabulary's parsers; see fault_words.hh.
#include "nabla/common/fault_words.hh"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "nabla/common/units.hh"

namespace nabla::common {
namespace {

using protocol::TracePoint;
using protocol::WaveKind;

[[noreturn]] void bad_flag(const char* flag, const std::string& why) {
  throw std::invalid_argument(std::string(flag) + ": " + why);
}

std::string lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

std::string_view trim(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front())))
    text.remove_prefix(1);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back())))
    text.remove_suffix(1);
  return text;
}

std::vector<std::string_view> split(std::string_view text, char separator) {
  std::vector<std::string_view> parts;
  size_t begin = 0;
  while (true) {
    const size_t end = text.find(separator, begin);
    parts.push_back(trim(text.substr(begin, end - begin)));
    if (end == std::string_view::npos) return parts;
    begin = end + 1;
  }
}

// A finite non-negative number at the start of `text`; the rest is its unit.
std::optional<std::pair<double, std::string_view>> number_and_unit(std::string_view text) {
  double value = 0.0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || !std::isfinite(value) || value < 0.0) return std::nullopt;
  return std::make_pair(value, trim(std::string_view(end, text.data() + text.size() - end)));
}

double flag_percent(const char* flag, std::string_view text) {
  try {
    return parse_percent(trim(text));
  } catch (const std::invalid_argument& e) {
    bad_flag(flag, e.what());
  }
}

int64_t flag_duration_ns(const char* flag, std::string_view text) {
  try {
    return parse_duration_ns(trim(text));
  } catch (const std::invalid_argument& e) {
    bad_flag(flag, e.what());
  }
}

struct Unit {
  const char* name;
  double scale;
};

constexpr Unit kRateUnits[] = {{"bit", 1.0},
                               {"kbit", 1e3},
                               {"mbit", 1e6},
                               {"gbit", 1e9},
                               {"tbit", 1e12},
                               {"kibit", 1024.0},
                               {"mibit", 1048576.0},
                               {"gibit", 1073741824.0},
                               {"tibit", 1099511627776.0},
                               {"bps", 8.0},
                               {"kbps", 8e3},
                               {"mbps", 8e6},
                               {"gbps", 8e9},
                               {"tbps", 8e12},
                               {"kibps", 8.0 * 1024.0},
                               {"mibps", 8.0 * 1048576.0},
                               {"gibps", 8.0 * 1073741824.0},
                               {"tibps", 8.0 * 1099511627776.0}};

constexpr Unit kSizeUnits[] = {{"", 1.0},
                               {"b", 1.0},
                               {"k", 1024.0},
                               {"kb", 1024.0},
                               {"m", 1048576.0},
                               {"mb", 1048576.0},
                               {"g", 1073741824.0},
                               {"gb", 1073741824.0},
                               {"kbit", 1024.0 / 8.0},
                               {"mbit", 1048576.0 / 8.0},
                               {"gbit", 1073741824.0 / 8.0}};

template <size_t N>
std::optional<double> scaled(std::string_view text, const Unit (&units)[N]) {
  const auto parsed = number_and_unit(trim(text));
  if (!parsed) return std::nullopt;
  const std::string unit = lower(parsed->second);
  for (const Unit& u : units) {
    if (unit == u.name) return parsed->first * u.scale;
  }
  return std::nullopt;
}

const std::string kWaveForms =
    "use square:PERIOD[,DUTY], sine:PERIOD or trace:FILE[,loop|once][,linear|step]";

// "FILE[,loop|once][,linear|step]": the options are taken from the end, so a
// file name may hold commas.
WaveFlag parse_trace_flag(std::string_view text) {
  WaveFlag w;
  w.kind = WaveKind::kTrace;
  std::string_view rest = text;
  for (size_t comma = rest.rfind(','); comma != std::string_view::npos; comma = rest.rfind(',')) {
    const std::string_view option = trim(rest.substr(comma + 1));
    if (option == "loop" || option == "once") {
      w.trace_loop = option == "loop";
    } else if (option == "linear" || option == "step") {
      w.interpolation = option == "step" ? protocol::TraceInterpolation::kStep
                                         : protocol::TraceInterpolation::kLinear;
    } else {
      break;
    }
    rest = rest.substr(0, comma);
  }
  w.trace_file = std::string(trim(rest));
  if (w.trace_file.empty()) bad_flag("--wave", "trace needs a file: " + kWaveForms);
  return w;
}

// A flag whose value is a number with a unit of `units`.
struct UnitFlag {
  const char* flag;
  const char* what;      // "rate"
  const char* accepted;  // the forms, for the error
  double min;
  double max;
  const char* range;  // "1kbit .. 1tbit"
};

template <size_t N>
double scaled_flag(std::string_view text, const Unit (&units)[N], const UnitFlag& f) {
  const std::optional<double> value = scaled(text, units);
  if (!value)
    bad_flag(f.flag, std::string("bad ") + f.what + " '" + std::string(text) + "'; " + f.accepted);
  if (*value < f.min || *value > f.max) bad_flag(f.flag, std::string("must be within ") + f.range);
  return *value;
}

}  // namespace

double parse_rate_bps(std::string_view text) {
  return scaled_flag(text, kRateUnits,
                     {"--rate", "rate",
                      "use a number with a unit: bit kbit mbit gbit tbit (x1000), kibit mibit "
                      "gibit tibit (x1024), bps kbps mbps gbps tbps (bytes/s)",
                      1000.0, 1e12, "1kbit .. 1tbit"});
}

int64_t parse_size_bytes(std::string_view text) {
  return std::llround(
      scaled_flag(text, kSizeUnits,
                  {"--burst", "size",
                   "use bytes or a number with b, k|kb, m|mb, g|gb (x1024) or kbit, mbit, gbit",
                   0.0, 1e9, "0 .. 1e9 bytes"}));
}

protocol::LossFault parse_loss_flag(std::string_view text) {
  protocol::LossFault loss;
  constexpr std::string_view kGe = "gemodel:";
  if (!text.starts_with(kGe)) {
    if (text.find(':') != std::string_view::npos) {
      bad_flag("--loss", "use P% or gemodel:P[,R[,1-H[,1-K]]] (percentages), got '" +
                             std::string(text) + "'");
    }
    loss.p = flag_percent("--loss", text);
    return loss;
  }
  const std::vector<std::string_view> parts = split(text.substr(kGe.size()), ',');
  if (parts.size() > 4) bad_flag("--loss", "gemodel takes at most 4 percentages: P,R,1-H,1-K");
  loss.model = protocol::LossModel::kGilbertElliott;
  loss.p = flag_percent("--loss", parts[0]);
  if (parts.size() > 1) loss.r = flag_percent("--loss", parts[1]);
  if (parts.size() > 2) loss.one_minus_h = flag_percent("--loss", parts[2]);
  if (parts.size() > 3) loss.one_minus_k = flag_percent("--loss", parts[3]);
  return loss;
}

WaveFlag parse_wave_flag(std::string_view text) {
  const size_t colon = text.find(':');
  if (colon == std::string_view::npos)
    bad_flag("--wave", kWaveForms + ", got '" + std::string(text) + "'");
  const std::string_view kind = text.substr(0, colon);
  const std::vector<std::string_view> parts = split(text.substr(colon + 1), ',');
  WaveFlag w;
  if (kind == "trace") return parse_trace_flag(text.substr(colon + 1));
  if (kind != "square" && kind != "sine")
    bad_flag("--wave", kWaveForms + ", got '" + std::string(text) + "'");
  w.kind = kind == "square" ? WaveKind::kSquare : WaveKind::kSine;
  if (parts.size() > (kind == "square" ? 2u : 1u)) bad_flag("--wave", kWaveForms);
  w.period_ns = flag_duration_ns("--wave", parts[0]);
  if (w.period_ns < protocol::kMinWavePeriodNs || w.period_ns > protocol::kMaxWavePeriodNs) {
    bad_flag("--wave", "the period must be within 1ms .. 1h");
  }
  if (parts.size() == 2) {
    const auto duty = number_and_unit(parts[1]);
    if (!duty || !duty->second.empty() || !(duty->first > 0.0 && duty->first < 1.0)) {
      bad_flag("--wave",
               "the duty must be a number in (0, 1), got '" + std::string(parts[1]) + "'");
    }
    w.duty = duty->first;
  }
  return w;
}

namespace {

[[noreturn]] void bad_row(size_t line, const std::string& why) {
  bad_flag("--wave", "trace line " + std::to_string(line) + ": " + why);
}

// A row's time offset: a duration with a unit, or a bare number of seconds.
int64_t row_offset_ns(std::string_view field, size_t line) {
  const auto parsed = number_and_unit(field);
  if (parsed && parsed->second.empty()) {
    if (parsed->first > 3600.0) bad_row(line, "t_offset beyond an hour");
    return std::llround(parsed->first * 1e9);
  }
  try {
    return parse_duration_ns(field);
  } catch (const std::invalid_argument& e) {
    bad_row(line, std::string("t_offset: ") + e.what());
  }
}

double row_level(std::string_view field, size_t line) {
  const auto parsed = number_and_unit(field);
  if (!parsed || !parsed->second.empty() || parsed->first > 1.0) {
    bad_row(line,
            "value must be a number within 0 .. 1 (a fraction of each fault's magnitude), "
            "got '" +
                std::string(field) + "'");
  }
  return parsed->first;
}

}  // namespace

std::vector<TracePoint> parse_trace_csv(std::string_view csv) {
  std::vector<TracePoint> points;
  bool first_row = true;
  int64_t origin_ns = 0;
  size_t line = 0;
  for (std::string_view row : split(csv, '\n')) {
    ++line;
    if (row.empty() || row.front() == '#') continue;
    if (first_row && std::isalpha(static_cast<unsigned char>(row.front()))) {
      first_row = false;  // a header
      continue;
    }
    first_row = false;
    const std::vector<std::string_view> fields = split(row, ',');
    if (fields.size() != 2) bad_row(line, "want two fields t_offset,value");
    const int64_t t_ns = row_offset_ns(fields[0], line);
    if (points.empty()) origin_ns = t_ns;
    if (!points.empty() && t_ns - origin_ns <= points.back().t_ns) {
      bad_row(line, "t_offset must be later than the row before");
    }
    if (points.size() == protocol::kMaxTracePoints) {
      bad_row(line, "more than " + std::to_string(protocol::kMaxTracePoints) + " rows");
    }
    if (t_ns - origin_ns > protocol::kMaxWavePeriodNs)
      bad_row(line, "the trace is over an hour long");
    points.push_back({t_ns - origin_ns, row_level(fields[1], line)});
  }
  if (points.size() < 2) bad_flag("--wave", "a trace needs at least 2 rows t_offset,value");
  return points;
}

std::string read_trace_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  if (in) text << in.rdbuf();
  if (!in || in.bad()) bad_flag("--wave", "cannot read trace file '" + path + "'");
  return text.str();
}

namespace {

// The waveform every delay and fault follows; nullopt: constant.
std::optional<protocol::Wave> requested_wave(const FaultFlags& f, const FileReader& read_file) {
  if (f.square_period && f.wave) bad_flag("--square-period", "give either it or --wave, not both");
  if (f.square_period) {
    if (!(f.duty > 0.0 && f.duty < 1.0)) bad_flag("--duty", "must be in (0, 1)");
    return protocol::Wave::square(0, flag_duration_ns("--square-period", *f.square_period), f.duty);
  }
  if (!f.wave) return std::nullopt;
  const WaveFlag w = parse_wave_flag(*f.wave);
  protocol::Wave wave;
  if (w.kind == WaveKind::kSquare) wave = protocol::Wave::square(0, w.period_ns, w.duty);
  if (w.kind == WaveKind::kSine) wave = protocol::Wave::sine(0, w.period_ns);
  if (w.kind == WaveKind::kTrace) {
    wave.kind = WaveKind::kTrace;
    wave.trace = parse_trace_csv(read_file(w.trace_file));
    wave.trace_loop = w.trace_loop;
    wave.interpolation = w.interpolation;
  }
  return wave;
}

// A flag that only refines another needs that one.
void require_with(bool refinement, const char* flag, bool base, const char* base_flag) {
  if (refinement && !base) bad_flag(flag, std::string("needs ") + base_flag);
}

void check_refinements(const FaultFlags& f) {
  require_with(f.jitter_distribution.has_value(), "--jitter-dist", f.jitter.has_value(),
               "--jitter");
  require_with(f.jitter_correlation.has_value(), "--jitter-correlation", f.jitter.has_value(),
               "--jitter");
  require_with(f.reorder_gap.has_value(), "--reorder-gap", f.reorder.has_value(), "--reorder");
  require_with(f.reorder.has_value(), "--reorder", f.delay.has_value(),
               "--delay (only delayed packets can be overtaken)");
  require_with(f.corrupt_fix_checksum, "--corrupt-fix-checksum", f.corrupt.has_value(),
               "--corrupt");
  require_with(f.burst.has_value(), "--burst", f.rate.has_value(), "--rate");
}

protocol::JitterFault jitter_fault(const FaultFlags& f) {
  protocol::JitterFault jitter;
  jitter.amount_ns = flag_duration_ns("--jitter", *f.jitter);
  if (jitter.amount_ns > protocol::kMaxDelayNs) bad_flag("--jitter", "must be at most 60s");
  const std::string distribution = f.jitter_distribution.value_or("uniform");
  using protocol::JitterDistribution;
  if (distribution == "uniform") {
    jitter.distribution = JitterDistribution::kUniform;
  } else if (distribution == "normal") {
    jitter.distribution = JitterDistribution::kNormal;
  } else if (distribution == "pareto") {
    jitter.distribution = JitterDistribution::kPareto;
  } else if (distribution == "paretonormal") {
    jitter.distribution = JitterDistribution::kParetoNormal;
  } else {
    bad_flag("--jitter-dist",
             "must be uniform|normal|pareto|paretonormal, got '" + distribution + "'");
  }
  if (f.jitter_correlation) {
    jitter.correlation = flag_percent("--jitter-correlation", *f.jitter_correlation);
    if (jitter.correlation > 0.999) bad_flag("--jitter-correlation", "must be at most 99.9%");
  }
  return jitter;
}

protocol::Faults faults_of(const FaultFlags& f) {
  protocol::Faults faults;
  if (f.jitter) faults.jitter = jitter_fault(f);
  if (f.loss) faults.loss = parse_loss_flag(*f.loss);
  if (f.partition) faults.partition = protocol::PartitionFault{};
  if (f.reorder) {
    protocol::ReorderFault reorder;
    reorder.probability = flag_percent("--reorder", *f.reorder);
    if (f.reorder_gap) {
      if (*f.reorder_gap < 1 || *f.reorder_gap > 1'000'000) {
        bad_flag("--reorder-gap", "must be an integer in 1 .. 1000000");
      }
      reorder.gap = *f.reorder_gap;
    }
    faults.reorder = reorder;
  }
  if (f.corrupt) {
    faults.corrupt = protocol::CorruptFault{std::nullopt, flag_percent("--corrupt", *f.corrupt),
                                            f.corrupt_fix_checksum};
  }
  if (f.duplicate) {
    faults.duplicate =
        protocol::DuplicateFault{std::nullopt, flag_percent("--duplicate", *f.duplicate)};
  }
  if (f.rate) {
    faults.rate_limit = protocol::RateLimitFault{std::nullopt, parse_rate_bps(*f.rate),
                                                 f.burst ? parse_size_bytes(*f.burst) : 0};
  }
  return faults;
}

// Every fault follows the one waveform.
template <typename Fault>
void follow(std::optional<Fault>& fault, const protocol::Wave& wave) {
  if (fault) fault->wave = wave;
}

}  // namespace

FaultRequest build_fault_request(const FaultFlags& f, const FileReader& read_file) {
  check_refinements(f);
  const std::optional<protocol::Wave> wave = requested_wave(f, read_file);
  FaultRequest request;
  request.faults = faults_of(f);
  if (f.delay) {
    const int64_t delay_ns = flag_duration_ns("--delay", *f.delay);
    if (delay_ns > protocol::kMaxDelayNs) bad_flag("--delay", "must be at most 60s");
    request.delay = wave.value_or(protocol::Wave::constant(0));
    request.delay->amplitude_ns = delay_ns;
  }
  if (!wave) return request;
  if (!f.delay && request.faults.empty()) {
    bad_flag(f.wave ? "--wave" : "--square-period", "needs --delay or a fault to shape");
  }
  protocol::Faults& faults = request.faults;
  follow(faults.jitter, *wave);
  follow(faults.loss, *wave);
  follow(faults.partition, *wave);
  follow(faults.reorder, *wave);
  follow(faults.corrupt, *wave);
  follow(faults.duplicate, *wave);
  follow(faults.rate_limit, *wave);
  return request;
}

}  // namespace nabla::common
