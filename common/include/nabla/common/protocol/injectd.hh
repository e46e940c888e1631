#pragma once
// The messages of nabla-injectd's control methods: one struct per method's
// params and per result, each with the one to_json and from_json both ends
// use (the daemon in injector/, the clients in the coordinator). A field
// renamed here changes both ends at once, and the golden files of
// tests/unit/common/golden/ catch a rename of the wire key itself.
//
// from_json validates the way the daemon always has: unknown fields are
// refused, ranges are checked, and every error is one std::invalid_argument
// whose message starts with the field's path ("faults.loss.p: must be within
// 0 .. 1"). to_json writes durations as integer nanoseconds and
// probabilities as numbers; from_json also takes the shorthands people type
// ("20ms", "5%"). The fields are documented in docs/protocol.md.
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "nabla/common/protocol/node.hh"

namespace nabla::common::protocol {

inline constexpr int64_t kMaxDelayNs = 60'000'000'000;          // 60 s
inline constexpr int64_t kMaxWavePeriodNs = 3'600'000'000'000;  // 1 h
inline constexpr int64_t kMinWavePeriodNs = 1'000'000;          // 1 ms
inline constexpr double kDefaultLeaseS = 10.0;
inline constexpr double kMaxLeaseS = 3600.0;

// Which hook of the node an injection sits on: OUTPUT, INPUT or FORWARD.
enum class Direction : uint8_t { kOut, kIn, kFwd };
std::string_view to_string(Direction direction) noexcept;
// "out" | "in" | "fwd"; throws std::invalid_argument otherwise.
Direction parse_direction(std::string_view text);

// How the daemon releases an injection's delayed packets. kSpin: its timer
// is armed by the daemon's release lead (--spin-us) and the loop polls to
// each deadline, for releases on time; the polling costs CPU while packets
// are held. kSleep: the loop sleeps to each deadline, so releases come
// later by the wake-up lateness (counted in the actual delay) and cost no
// polling. Gradient campaigns ask for kSleep: their delay step is the
// measured one, and CPU spent only while a wave is high would be part of
// what they measure (docs/timing.md, "Releases for a measurement").
enum class Release : uint8_t { kSpin, kSleep };
std::string_view to_string(Release release) noexcept;
// "spin" | "sleep"; throws std::invalid_argument otherwise.
Release parse_release(std::string_view text);

enum class WaveKind : uint8_t { kOff, kConstant, kSquare, kSine, kTrace };

inline constexpr size_t kMaxTracePoints = 2000;  // a trace's samples travel in the request

enum class TraceInterpolation : uint8_t { kLinear, kStep };

// One sample of a trace wave: from t_ns after the trace's start the wave's
// level (a fraction 0 .. 1 of the magnitude it scales).
struct TracePoint {
  int64_t t_ns = 0;
  double level = 0.0;
  bool operator==(const TracePoint&) const = default;
};

// A waveform as requested: the delay's shape, or the level of a fault (its
// magnitude times a level between 0 and 1). Square and sine use period,
// phase and cycles (duty: square only); a trace uses its points (the first
// at 0, strictly increasing; the last one's time is the trace's length),
// plays them looped or once, and interpolates linearly or holds each level
// until the next point (step).
struct Wave {
  WaveKind kind = WaveKind::kOff;
  int64_t amplitude_ns = 0;
  int64_t period_ns = 0;
  double duty = 0.5;
  int64_t phase_ns = 0;
  int64_t cycles = 0;  // 0 = forever
  std::vector<TracePoint> trace;
  bool trace_loop = true;
  TraceInterpolation interpolation = TraceInterpolation::kLinear;
  bool operator==(const Wave&) const = default;

  static Wave constant(int64_t amplitude_ns) {
    Wave w;
    w.kind = WaveKind::kConstant;
    w.amplitude_ns = amplitude_ns;
    return w;
  }
  static Wave square(int64_t amplitude_ns, int64_t period_ns, double duty = 0.5,
                     int64_t cycles = 0) {
    Wave w = constant(amplitude_ns);
    w.kind = WaveKind::kSquare;
    w.period_ns = period_ns;
    w.duty = duty;
    w.cycles = cycles;
    return w;
  }
  static Wave sine(int64_t amplitude_ns, int64_t period_ns) {
    Wave w = square(amplitude_ns, period_ns);
    w.kind = WaveKind::kSine;
    return w;
  }

  // Params form: {"kind", "amplitude", "period", "duty", "phase", "cycles"}
  // (a trace: {"kind", "amplitude", "points": [[t, level], ...], "loop",
  // "interpolation"}); a bare duration is a constant wave.
  nlohmann::json to_json() const;
  static Wave from_json(const nlohmann::json& value, const std::string& path);
  // Result form (an injection's description): the same with "_ns" keys.
  nlohmann::json to_result_json() const;
  static Wave from_result_json(const nlohmann::json& value, const std::string& path);
};

// Faults; each is gated by its own wave (absent: always on).
enum class JitterDistribution : uint8_t { kUniform, kNormal, kPareto, kParetoNormal };
struct JitterFault {
  std::optional<Wave> wave;
  int64_t amount_ns = 0;
  JitterDistribution distribution = JitterDistribution::kUniform;
  double correlation = 0.0;
  bool operator==(const JitterFault&) const = default;
};

enum class LossModel : uint8_t { kBernoulli, kGilbertElliott };
struct LossFault {
  std::optional<Wave> wave;
  LossModel model = LossModel::kBernoulli;
  double p = 0.0;
  double r = 1.0;            // Gilbert–Elliott only, as the next two
  double one_minus_h = 1.0;  // loss probability in the bad state
  double one_minus_k = 0.0;  // loss probability in the good state
  bool operator==(const LossFault&) const = default;
};

struct PartitionFault {
  std::optional<Wave> wave;
  bool operator==(const PartitionFault&) const = default;
};

struct ReorderFault {
  std::optional<Wave> wave;
  double probability = 0.0;
  int64_t gap = 1;
  bool operator==(const ReorderFault&) const = default;
};

struct CorruptFault {
  std::optional<Wave> wave;
  double probability = 0.0;
  bool fix_checksum = true;
  bool operator==(const CorruptFault&) const = default;
};

struct DuplicateFault {
  std::optional<Wave> wave;
  double probability = 0.0;
  bool operator==(const DuplicateFault&) const = default;
};

struct RateLimitFault {
  std::optional<Wave> wave;
  double rate_bps = 0.0;
  int64_t burst_bytes = 0;
  bool operator==(const RateLimitFault&) const = default;
};

struct Faults {
  std::optional<JitterFault> jitter;
  std::optional<LossFault> loss;
  std::optional<PartitionFault> partition;
  std::optional<ReorderFault> reorder;
  std::optional<CorruptFault> corrupt;
  std::optional<DuplicateFault> duplicate;
  std::optional<RateLimitFault> rate_limit;
  bool operator==(const Faults&) const = default;

  bool empty() const { return *this == Faults{}; }
  nlohmann::json to_json() const;
  static Faults from_json(const nlohmann::json& value);
};

// What inject.start and inject.update both set.
struct InjectionSettings {
  std::optional<Wave> delay;  // absent: no delay
  Faults faults;
  std::optional<double> lease_s;  // absent: 10 s on start, unchanged on update
  std::optional<uint64_t> seed;   // absent: random on start, unchanged on update
  bool operator==(const InjectionSettings&) const = default;
};

// The results, named by the params of their method (Params::Result: what
// RpcClient::call of a Params returns).
struct InjectionDescription;
struct InjectStopResult;
struct InjectStatsResult;
struct InjectListResult;
struct LeaseRenewResult;

struct InjectStartParams {
  static constexpr const char* kMethod = "inject.start";
  using Result = InjectionDescription;
  std::string link;  // a link spec, checked by parse_link_spec
  Direction direction = Direction::kOut;
  InjectionSettings settings;
  // The network namespace to inject in: NAME (under /run/netns), /path or
  // pid:N (common::netns_path); absent: the daemon's.
  std::optional<std::string> netns = std::nullopt;
  // The client's session token (kOwnerChars, 1..64): the injection belongs to
  // this token together with the caller's key. Absent: to the key alone.
  std::optional<std::string> owner = std::nullopt;
  Release release = Release::kSpin;  // "release"; sent only when kSleep
  bool operator==(const InjectStartParams&) const = default;

  nlohmann::json to_json() const;
  static InjectStartParams from_json(const nlohmann::json& params);
};

struct InjectUpdateParams {
  static constexpr const char* kMethod = "inject.update";
  using Result = InjectionDescription;
  std::string id;
  InjectionSettings settings;
  std::optional<std::string> owner = std::nullopt;  // as at inject.start
  bool force = false;                               // change it even when another session owns it
  bool operator==(const InjectUpdateParams&) const = default;

  nlohmann::json to_json() const;
  static InjectUpdateParams from_json(const nlohmann::json& params);
};

// inject.stop's params.
struct InjectStopParams {
  static constexpr const char* kMethod = "inject.stop";
  using Result = InjectStopResult;
  std::string id;
  std::optional<std::string> owner = std::nullopt;  // as at inject.start
  bool force = false;                               // stop it even when another session owns it
  bool operator==(const InjectStopParams&) const = default;

  nlohmann::json to_json() const;
  static InjectStopParams from_json(const nlohmann::json& params);
};

struct InjectStatsParams {
  static constexpr const char* kMethod = "inject.stats";
  using Result = InjectStatsResult;
  std::string id;
  bool cycles = false;  // also the per-cycle summaries
  bool operator==(const InjectStatsParams&) const = default;

  nlohmann::json to_json() const;
  static InjectStatsParams from_json(const nlohmann::json& params);
};

// inject.list's params (none).
struct InjectListParams : NoParams {
  static constexpr const char* kMethod = "inject.list";
  using Result = InjectListResult;
};

struct LeaseRenewParams {
  static constexpr const char* kMethod = "lease.renew";
  using Result = LeaseRenewResult;
  std::string id;
  std::optional<double> lease_s;                    // absent: keep the current lease length
  std::optional<std::string> owner = std::nullopt;  // as at inject.start
  bool force = false;                               // renew it even when another session owns it
  bool operator==(const LeaseRenewParams&) const = default;

  nlohmann::json to_json() const;
  static LeaseRenewParams from_json(const nlohmann::json& params);
};

// An injection as the daemon describes it (inject.start, inject.update and
// inject.list results; the top of inject.stop and inject.stats results).
struct InjectionDescription {
  std::string id;
  std::string link;  // canonical link spec
  Direction direction = Direction::kOut;
  uint16_t queue_num = 0;
  uint64_t seed = 0;
  Wave delay;
  double lease_s = 0.0;
  double lease_remaining_s = 0.0;
  double running_s = 0.0;
  // Who may stop, update and renew it without force: "session TOKEN, key
  // KEYID" or "key KEYID" (started without a token); "" from an older daemon.
  std::string owner;
  Release release = Release::kSpin;  // "release"; absent from an older daemon: spin
  bool operator==(const InjectionDescription&) const = default;

  nlohmann::json to_json() const;
  static InjectionDescription from_json(const nlohmann::json& result);
};

// The added delay actually measured: {count, mean, std, p50, p99, min, max}.
struct DelaySummary {
  uint64_t count = 0;
  double mean_ns = 0.0;
  double std_ns = 0.0;  // sample standard deviation (n - 1); 0 when count < 2
  int64_t p50_ns = 0;
  int64_t p99_ns = 0;
  int64_t min_ns = 0;
  int64_t max_ns = 0;
  bool operator==(const DelaySummary&) const = default;

  nlohmann::json to_json() const;
  static DelaySummary from_json(const nlohmann::json& value, const std::string& path);
};

// An injection's packet counters, by outcome.
struct PacketCounters {
  uint64_t packets = 0;  // seen by the injector
  uint64_t bytes = 0;
  uint64_t delayed = 0;  // released later than received
  uint64_t dropped = 0;  // by loss or partition faults
  uint64_t corrupted = 0;
  uint64_t duplicated = 0;
  uint64_t reordered = 0;   // sent at once by the reorder fault
  uint64_t queue_full = 0;  // kernel queue overflowed, or past --max-held-bytes (passed)
  uint64_t enobufs = 0;     // netlink receive buffer overruns
  uint64_t verdict_errors = 0;
  bool operator==(const PacketCounters&) const = default;
};

struct CycleDelay {
  int64_t cycle = 0;
  DelaySummary high;
  DelaySummary low;
  bool operator==(const CycleDelay&) const = default;
};

// Counters and actual delays: inject.stop's "stats", and part of
// inject.stats' result.
struct InjectionStats {
  PacketCounters counters;
  DelaySummary actual_delay;                      // "actual_delay_ns"
  DelaySummary high;                              // "halves.high": while the delay wave was high
  DelaySummary low;                               // "halves.low"
  std::optional<std::vector<CycleDelay>> cycles;  // inject.stats with cycles
  bool operator==(const InjectionStats&) const = default;

  nlohmann::json to_json() const;
  static InjectionStats from_json(const nlohmann::json& value, const std::string& path);
};

struct InjectStopResult {
  InjectionDescription injection;
  // Absent when the daemon had already lost the injection's pipeline.
  std::optional<InjectionStats> stats;
  bool operator==(const InjectStopResult&) const = default;

  // {description..., "stats": {stats..., "seed"}}
  nlohmann::json to_json() const;
  static InjectStopResult from_json(const nlohmann::json& result);
};

// The engine's view of one injection's queue.
struct QueueStats {
  uint64_t held = 0;  // packets being delayed now
  uint32_t queue_maxlen = 0;
  uint64_t id_gaps = 0;
  uint64_t batch_verdicts = 0;
  uint64_t verdicts = 0;
  uint64_t kernel_stamped = 0;  // delays counted from the kernel's queue stamp
  uint64_t receive_calls = 0;
  uint64_t verdict_sends = 0;
  uint64_t verdict_send_ns = 0;
  uint64_t loop_wakeups = 0;  // of the whole daemon's loop
  bool operator==(const QueueStats&) const = default;
};

// The kernel's own counters of the queue (/proc/net/netfilter/nfnetlink_queue).
struct KernelQueueStats {
  uint64_t queue_total = 0;
  uint64_t queue_dropped = 0;
  uint64_t user_dropped = 0;
  uint64_t id_sequence = 0;
  bool operator==(const KernelQueueStats&) const = default;
};

// inject.stats' result: one flat object of all four parts.
struct InjectStatsResult {
  InjectionDescription injection;
  std::optional<InjectionStats> stats;  // the three below are all present or absent
  std::optional<QueueStats> queue;
  std::optional<KernelQueueStats> kernel;  // absent when the kernel has no such queue
  bool operator==(const InjectStatsResult&) const = default;

  nlohmann::json to_json() const;
  static InjectStatsResult from_json(const nlohmann::json& result);
};

struct InjectListResult {
  std::vector<InjectionDescription> injections;
  bool operator==(const InjectListResult&) const = default;

  nlohmann::json to_json() const;
  static InjectListResult from_json(const nlohmann::json& result);
};

struct LeaseRenewResult {
  std::string id;
  double lease_remaining_s = 0.0;
  bool operator==(const LeaseRenewResult&) const = default;

  nlohmann::json to_json() const;
  static LeaseRenewResult from_json(const nlohmann::json& result);
};

// daemon.info of nabla-injectd.
struct InjectorInfo {
  static constexpr const char* kMethod = DaemonInfoParams::kMethod;
  struct Lateness {  // of the release loop's timer wake-ups, in µs
    double p50_us = 0, p90_us = 0, p99_us = 0, max_us = 0;
    uint64_t samples = 0;
    uint64_t recorded = 0;
    bool operator==(const Lateness&) const = default;
  };
  struct Timer {
    bool self_calibrated = true;  // "mode": "self-calibrated" | "fixed"
    double lead_us = 0.0;
    Lateness wakeup_lateness;
    double polled_s = 0.0;
    double polled_fraction = 0.0;
    bool operator==(const Timer&) const = default;
  };
  struct CpuLatency {
    std::optional<int32_t> limit_us;  // null when not requested
    bool held = false;
    std::string error;
    bool operator==(const CpuLatency&) const = default;
  };
  std::string name = "nabla-injectd";
  std::string version;
  int64_t pid = 0;
  uint16_t queue_base = 0;
  uint32_t queue_maxlen = 0;
  int64_t max_injections = 0;
  Timer timer;
  int64_t busy_poll_us = 0;
  CpuLatency cpu_latency;
  uint64_t injections = 0;
  double uptime_s = 0.0;
  NodeFacts node;  // features: "nfqueue", "cpu_latency"
  ControlCounters control;
  bool operator==(const InjectorInfo&) const = default;

  nlohmann::json to_json() const;
  static InjectorInfo from_json(const nlohmann::json& result);
};

// lease_s of inject.start, inject.update and lease.renew params: absent, or
// a number of seconds in (0, 3600].
std::optional<double> read_lease_s(const nlohmann::json& params);

}  // namespace nabla::common::protocol
