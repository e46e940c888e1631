// Waves and faults of nabla-injectd's params; see protocol/injectd.hh.
#include <stdexcept>

#include "nabla/common/protocol/injectd.hh"
#include "protocol_fields.hh"

namespace nabla::common::protocol {

using nlohmann::json;

namespace {

const char* kind_name(WaveKind kind) {
  switch (kind) {
    case WaveKind::kOff:
      return "off";
    case WaveKind::kConstant:
      return "constant";
    case WaveKind::kSquare:
      return "square";
    case WaveKind::kSine:
      return "sine";
    case WaveKind::kTrace:
      break;
  }
  return "trace";
}

constexpr const char* kKinds = "constant|square|sine|trace|off";

// The periodic fields (square and sine), shared by both forms; `suffix` is
// "" or "_ns".
void read_periodic(const ObjectReader& in, Wave& w, const std::string& suffix) {
  const std::string period_key = "period" + suffix;
  const std::string phase_key = "phase" + suffix;
  const json& period = in.require(period_key.c_str(), "required for a square or sine wave");
  w.period_ns = read_duration_ns(period, in.path(period_key.c_str()), kMaxWavePeriodNs);
  if (w.period_ns < kMinWavePeriodNs)
    bad_field(in.path(period_key.c_str()), "must be at least 1ms");
  if (const json* duty = in.find("duty")) w.duty = read_number_within(*duty, in.path("duty"), 0, 1);
  if (const json* phase = in.find(phase_key.c_str())) {
    w.phase_ns = read_duration_ns(*phase, in.path(phase_key.c_str()), w.period_ns);
  }
  if (const json* cycles = in.find("cycles")) {
    if (!cycles->is_number_integer() || cycles->get<int64_t>() < 0) {
      bad_field(in.path("cycles"), "must be a non-negative integer (0 = forever)");
    }
    w.cycles = cycles->get<int64_t>();
  }
}

// A trace's points: 2 .. kMaxTracePoints pairs [t, level], t a duration
// (the first 0, strictly increasing, the last at most an hour), level 0 .. 1.
std::vector<TracePoint> read_trace_points(const json& points, const std::string& path) {
  if (!points.is_array() || points.size() < 2 || points.size() > kMaxTracePoints) {
    bad_field(path,
              "must be an array of 2 .. " + std::to_string(kMaxTracePoints) + " points [t, level]");
  }
  std::vector<TracePoint> out;
  out.reserve(points.size());
  for (size_t i = 0; i < points.size(); ++i) {
    const std::string at = path + "[" + std::to_string(i) + "]";
    const json& p = points[i];
    if (!p.is_array() || p.size() != 2) bad_field(at, "must be a pair [t, level]");
    TracePoint point{read_duration_ns(p[0], at + "[0]", kMaxWavePeriodNs),
                     read_number_within(p[1], at + "[1]", 0.0, 1.0)};
    if (i == 0 && point.t_ns != 0) bad_field(at + "[0]", "the first point must be at 0");
    if (i > 0 && point.t_ns <= out.back().t_ns) {
      bad_field(at + "[0]", "must be later than the point before");
    }
    out.push_back(point);
  }
  return out;
}

void read_trace(const ObjectReader& in, Wave& w) {
  w.trace = read_trace_points(in.require("points", "required for a trace wave"), in.path("points"));
  w.trace_loop = in.boolean_or("loop", true);
  const std::string interpolation = in.string_or("interpolation", "linear");
  if (interpolation == "step") {
    w.interpolation = TraceInterpolation::kStep;
  } else if (interpolation != "linear") {
    bad_field(in.path("interpolation"), "must be linear|step, got '" + interpolation + "'");
  }
}

Wave read_wave(const json& value, const std::string& path, const std::string& suffix) {
  const ObjectReader in(value, path);
  const std::string amplitude_key = "amplitude" + suffix;
  in.reject_unknown({"kind", amplitude_key.c_str(), ("period" + suffix).c_str(), "duty",
                     ("phase" + suffix).c_str(), "cycles", "points", "loop", "interpolation"});
  const json* kind = in.find("kind");
  if (kind == nullptr || !kind->is_string())
    bad_field(in.path("kind"), std::string("must be ") + kKinds);
  const std::string k = kind->get<std::string>();
  Wave w;
  if (const json* amplitude = in.find(amplitude_key.c_str())) {
    w.amplitude_ns = read_duration_ns(*amplitude, in.path(amplitude_key.c_str()), kMaxDelayNs);
  }
  if (k == "off") return Wave{};
  if (k == "constant") return Wave::constant(w.amplitude_ns);
  if (k == "square" || k == "sine") {
    w.kind = k == "square" ? WaveKind::kSquare : WaveKind::kSine;
    read_periodic(in, w, suffix);
    return w;
  }
  if (k != "trace")
    bad_field(in.path("kind"), std::string("must be ") + kKinds + ", got '" + k + "'");
  w.kind = WaveKind::kTrace;
  read_trace(in, w);
  return w;
}

json wave_json(const Wave& w, const std::string& suffix) {
  json out{{"kind", kind_name(w.kind)}};
  if (w.kind == WaveKind::kOff) return out;
  out["amplitude" + suffix] = w.amplitude_ns;
  if (w.kind == WaveKind::kConstant) return out;
  if (w.kind == WaveKind::kTrace) {
    json points = json::array();
    for (const TracePoint& p : w.trace) points.push_back({p.t_ns, p.level});
    out["points"] = std::move(points);
    out["loop"] = w.trace_loop;
    out["interpolation"] = w.interpolation == TraceInterpolation::kStep ? "step" : "linear";
    return out;
  }
  out["period" + suffix] = w.period_ns;
  out["duty"] = w.duty;
  out["phase" + suffix] = w.phase_ns;
  out["cycles"] = w.cycles;
  return out;
}

// A fault's object: its reader with the known fields checked, and its gate.
ObjectReader fault_reader(const json& value, const std::string& path,
                          std::initializer_list<const char*> known) {
  ObjectReader in(value, path);
  in.reject_unknown(known);
  return in;
}

std::optional<Wave> gate(const ObjectReader& in) {
  const json* w = in.find("wave");
  if (w == nullptr) return std::nullopt;
  return Wave::from_json(*w, in.path("wave"));
}

void put_gate(json& out, const std::optional<Wave>& wave) {
  if (wave) out["wave"] = wave->to_json();
}

double required_probability(const ObjectReader& in, const char* key) {
  return read_probability(in.require(key), in.path(key));
}

constexpr std::pair<JitterDistribution, const char*> kDistributions[] = {
    {JitterDistribution::kUniform, "uniform"},
    {JitterDistribution::kNormal, "normal"},
    {JitterDistribution::kPareto, "pareto"},
    {JitterDistribution::kParetoNormal, "paretonormal"}};

JitterFault read_jitter(const json& value) {
  const ObjectReader in =
      fault_reader(value, "faults.jitter", {"amount", "distribution", "correlation", "wave"});
  JitterFault f;
  f.wave = gate(in);
  f.amount_ns = read_duration_ns(in.require("amount"), in.path("amount"), kMaxDelayNs);
  const std::string d = in.string_or("distribution", "uniform");
  bool known = false;
  for (const auto& [distribution, name] : kDistributions) {
    if (d == name) {
      f.distribution = distribution;
      known = true;
    }
  }
  if (!known) {
    bad_field(in.path("distribution"),
              "must be uniform|normal|pareto|paretonormal, got '" + d + "'");
  }
  if (const json* c = in.find("correlation")) {
    f.correlation = read_number_within(*c, in.path("correlation"), 0.0, 0.999);
  }
  return f;
}

json jitter_json(const JitterFault& f) {
  const char* name = "uniform";
  for (const auto& [distribution, text] : kDistributions) {
    if (f.distribution == distribution) name = text;
  }
  json out{{"amount", f.amount_ns}, {"distribution", name}, {"correlation", f.correlation}};
  put_gate(out, f.wave);
  return out;
}

LossFault read_loss(const json& value) {
  const ObjectReader in =
      fault_reader(value, "faults.loss", {"model", "p", "r", "one_minus_h", "one_minus_k", "wave"});
  LossFault f;
  f.wave = gate(in);
  const std::string model = in.string_or("model", "bernoulli");
  f.p = required_probability(in, "p");
  if (model == "bernoulli") return f;
  if (model != "gilbert_elliott") {
    bad_field(in.path("model"), "must be bernoulli|gilbert_elliott, got '" + model + "'");
  }
  f.model = LossModel::kGilbertElliott;
  f.r = read_probability(in.require("r", "required for gilbert_elliott"), in.path("r"));
  if (const json* h = in.find("one_minus_h")) {
    f.one_minus_h = read_probability(*h, in.path("one_minus_h"));
  }
  if (const json* k = in.find("one_minus_k")) {
    f.one_minus_k = read_probability(*k, in.path("one_minus_k"));
  }
  return f;
}

json loss_json(const LossFault& f) {
  json out{{"model", f.model == LossModel::kBernoulli ? "bernoulli" : "gilbert_elliott"},
           {"p", f.p}};
  if (f.model == LossModel::kGilbertElliott) {
    out["r"] = f.r;
    out["one_minus_h"] = f.one_minus_h;
    out["one_minus_k"] = f.one_minus_k;
  }
  put_gate(out, f.wave);
  return out;
}

ReorderFault read_reorder(const json& value) {
  const ObjectReader in = fault_reader(value, "faults.reorder", {"probability", "gap", "wave"});
  ReorderFault f;
  f.wave = gate(in);
  f.probability = required_probability(in, "probability");
  if (const json* gap = in.find("gap")) {
    if (!gap->is_number_integer() || gap->get<int64_t>() < 0 || gap->get<int64_t>() > 1'000'000) {
      bad_field(in.path("gap"), "must be an integer in 0 .. 1000000");
    }
    f.gap = gap->get<int64_t>();
  }
  return f;
}

CorruptFault read_corrupt(const json& value) {
  const ObjectReader in =
      fault_reader(value, "faults.corrupt", {"probability", "fix_checksum", "wave"});
  CorruptFault f;
  f.wave = gate(in);
  f.probability = required_probability(in, "probability");
  f.fix_checksum = in.boolean_or("fix_checksum", true);
  return f;
}

DuplicateFault read_duplicate(const json& value) {
  const ObjectReader in = fault_reader(value, "faults.duplicate", {"probability", "wave"});
  return DuplicateFault{gate(in), required_probability(in, "probability")};
}

RateLimitFault read_rate_limit(const json& value) {
  const ObjectReader in =
      fault_reader(value, "faults.rate_limit", {"rate_bps", "burst_bytes", "wave"});
  RateLimitFault f;
  f.wave = gate(in);
  f.rate_bps = read_number_within(in.require("rate_bps"), in.path("rate_bps"), 1000.0, 1e12);
  if (const json* burst = in.find("burst_bytes")) {
    f.burst_bytes =
        static_cast<int64_t>(read_number_within(*burst, in.path("burst_bytes"), 0.0, 1e9));
  }
  return f;
}

}  // namespace

std::string_view to_string(Direction direction) noexcept {
  switch (direction) {
    case Direction::kOut:
      return "out";
    case Direction::kIn:
      return "in";
    case Direction::kFwd:
      break;
  }
  return "fwd";
}

Direction parse_direction(std::string_view text) {
  if (text == "out") return Direction::kOut;
  if (text == "in") return Direction::kIn;
  if (text == "fwd") return Direction::kFwd;
  throw std::invalid_argument("direction must be out|in|fwd, got '" + std::string(text) + "'");
}

std::string_view to_string(Release release) noexcept {
  return release == Release::kSleep ? "sleep" : "spin";
}

Release parse_release(std::string_view text) {
  if (text == "spin") return Release::kSpin;
  if (text == "sleep") return Release::kSleep;
  throw std::invalid_argument("release must be spin|sleep, got '" + std::string(text) + "'");
}

json Wave::to_json() const {
  return wave_json(*this, "");
}

Wave Wave::from_json(const json& value, const std::string& path) {
  if (value.is_string() || value.is_number_integer()) {
    return Wave::constant(read_duration_ns(value, path, kMaxDelayNs));
  }
  return read_wave(value, path, "");
}

json Wave::to_result_json() const {
  return wave_json(*this, "_ns");
}

Wave Wave::from_result_json(const json& value, const std::string& path) {
  return read_wave(value, path, "_ns");
}

json Faults::to_json() const {
  json out = json::object();
  if (jitter) out["jitter"] = jitter_json(*jitter);
  if (loss) out["loss"] = loss_json(*loss);
  if (partition) put_gate(out["partition"] = json::object(), partition->wave);
  if (reorder) {
    out["reorder"] = {{"probability", reorder->probability}, {"gap", reorder->gap}};
    put_gate(out["reorder"], reorder->wave);
  }
  if (corrupt) {
    out["corrupt"] = {{"probability", corrupt->probability},
                      {"fix_checksum", corrupt->fix_checksum}};
    put_gate(out["corrupt"], corrupt->wave);
  }
  if (duplicate) {
    out["duplicate"] = {{"probability", duplicate->probability}};
    put_gate(out["duplicate"], duplicate->wave);
  }
  if (rate_limit) {
    out["rate_limit"] = {{"rate_bps", rate_limit->rate_bps},
                         {"burst_bytes", rate_limit->burst_bytes}};
    put_gate(out["rate_limit"], rate_limit->wave);
  }
  return out;
}

Faults Faults::from_json(const json& value) {
  const ObjectReader in(value, "faults");
  in.reject_unknown(
      {"jitter", "loss", "partition", "reorder", "corrupt", "duplicate", "rate_limit"});
  Faults f;
  if (const json* v = in.find("jitter")) f.jitter = read_jitter(*v);
  if (const json* v = in.find("loss")) f.loss = read_loss(*v);
  if (const json* v = in.find("partition")) {
    f.partition = PartitionFault{gate(fault_reader(*v, "faults.partition", {"wave"}))};
  }
  if (const json* v = in.find("reorder")) f.reorder = read_reorder(*v);
  if (const json* v = in.find("corrupt")) f.corrupt = read_corrupt(*v);
  if (const json* v = in.find("duplicate")) f.duplicate = read_duplicate(*v);
  if (const json* v = in.find("rate_limit")) f.rate_limit = read_rate_limit(*v);
  return f;
}

}  // namespace nabla::common::protocol
