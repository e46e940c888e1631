#pragma once
// Fault models. Each is deterministic given its seed and inputs (seeded
// std::mt19937_64, now passed in) and scaled by its own waveform: the fault's
// magnitude is its parameter times the waveform's level (0 .. 1; a square
// wave switches it fully on and off, a sine or trace varies it smoothly).
// The waveform's amplitude is not used by faults. At level 0 a fault draws
// no random numbers, so a stretch of level 0 never shifts its pattern. netem
// is the yardstick for the semantics; differences are noted per model.
#include <cstdint>
#include <random>
#include <span>

#include "nabla/common/protocol/injectd.hh"
#include "nabla/injector/waveform.hh"

namespace nabla::injector {

// A per-fault seed derived from the injection seed (splitmix64 finaliser), so
// that adding one fault never changes the pattern of another.
uint64_t derive_seed(uint64_t injection_seed, uint64_t fault_index);

using JitterDistribution = common::protocol::JitterDistribution;

struct JitterSpec {
  Waveform wave;
  int64_t jitter_ns = 0;  // netem's "jitter": the spread (sigma) around the delay
  JitterDistribution distribution = JitterDistribution::kUniform;
  double correlation = 0.0;  // [0, 1): netem's correlated uniform source
};

// Added delay around the mean, in ns (may be negative; the caller clamps the
// total delay at zero), at most the 60 s maximum delay either way: a Pareto
// tail would otherwise reach thousands of times the spread. As netem: uniform is U(-jitter,
// +jitter); normal is N(0, jitter); pareto is a Pareto with shape 3 shifted to zero mean and scaled
// by 4/3 (netem's paretonormal.c table); pareto-normal is 3/4 pareto + 1/4
// normal. Correlation follows netem's get_crandom: u' = (1-c) u + c u_last on
// the uniform source, which is then mapped through the distribution's
// inverse CDF.
class Jitter {
 public:
  Jitter(const JitterSpec& spec, uint64_t seed);
  int64_t offset_ns(int64_t now_ns);

 private:
  double correlated_uniform();
  JitterSpec spec_;
  std::mt19937_64 rng_;
  double last_uniform_ = 0.5;
};

using LossModel = common::protocol::LossModel;

struct LossSpec {
  Waveform wave;
  LossModel model = LossModel::kBernoulli;
  double p = 0.0;            // Bernoulli: loss probability; GE: P(good -> bad)
  double r = 1.0;            // GE: P(bad -> good)
  double one_minus_h = 1.0;  // GE: loss probability in the bad state
  double one_minus_k = 0.0;  // GE: loss probability in the good state
};

// Gilbert–Elliott as netem's gemodel: the loss draw uses the state the packet
// arrives in, then the state transitions. With 1-h = 1 and 1-k = 0 the mean
// loss burst is 1/r packets. The waveform's level scales the two loss
// probabilities (1-h, 1-k), not the transitions.
class Loss {
 public:
  Loss(const LossSpec& spec, uint64_t seed);
  bool drop(int64_t now_ns);
  bool in_bad_state() const { return bad_; }

 private:
  LossSpec spec_;
  std::mt19937_64 rng_;
  std::uniform_real_distribution<double> unit_{0.0, 1.0};
  bool bad_ = false;
};

// Drops everything while its waveform is high (level at least 1/2).
struct Partition {
  Waveform wave;
  bool drop(int64_t now_ns) const { return wave.high(now_ns); }
};

struct ReorderSpec {
  Waveform wave;
  double probability = 0.0;
  int64_t gap = 1;  // netem: only every gap-th packet is a candidate; 0 = never
};

// netem's reorder: a candidate packet (the counter reached gap-1) is, with the
// given probability, sent at once instead of delayed (bypassing the per-flow
// FIFO); otherwise it is delayed normally and the counter grows.
class Reorder {
 public:
  Reorder(const ReorderSpec& spec, uint64_t seed);
  bool send_now(int64_t now_ns);

 private:
  ReorderSpec spec_;
  std::mt19937_64 rng_;
  std::uniform_real_distribution<double> unit_{0.0, 1.0};
  int64_t counter_ = 0;
};

// A Bernoulli decision, probability × level (corruption, duplication).
class GatedCoin {
 public:
  GatedCoin(const Waveform& wave, double probability, uint64_t seed);
  bool flip(int64_t now_ns);

 private:
  Waveform wave_;
  double probability_;
  std::mt19937_64 rng_;
  std::uniform_real_distribution<double> unit_{0.0, 1.0};
};

// Flips one random bit of the transport payload of an IPv4/IPv6 TCP or UDP
// packet (netem flips a bit anywhere; we keep headers intact so the packet is
// still delivered to the socket and the corruption is observable). With
// fix_checksum the TCP/UDP checksum is recomputed, so the receiver's stack
// accepts the corrupted payload; without it the receiver drops the packet.
// checksum_not_ready: the packet's checksum field holds only the
// pseudo-header sum (a locally sent packet, CHECKSUM_PARTIAL); it is
// completed before the flip, as netem does, so that the receiver's check
// sees exactly the flipped bit. Left partial, the receiver would compare the
// whole corrupted payload against the pseudo-header sum alone, which passes
// by chance for about 1 packet in 65536.
// Returns false (packet unchanged) when there is no payload or the packet is
// not TCP/UDP over IP, or is truncated.
bool corrupt_packet(std::span<uint8_t> packet, std::mt19937_64& rng, bool fix_checksum,
                    bool checksum_not_ready = false);

// Recomputes the TCP or UDP checksum of an IPv4/IPv6 packet in place.
// Returns false when the packet is not TCP/UDP over IP or is truncated.
bool fix_transport_checksum(std::span<uint8_t> packet);

// Verifies the TCP/UDP checksum (used by tests and by the corruption path).
bool transport_checksum_ok(std::span<const uint8_t> packet);

struct RateLimitSpec {
  Waveform wave;
  double rate_bps = 0.0;    // bits per second, > 0
  int64_t burst_bytes = 0;  // bucket depth; 0 = pure serialisation
  // The longest wait the backlog may hold: the documented 60 s maximum delay.
  int64_t max_wait_ns = common::protocol::kMaxDelayNs;
};

// Token bucket: packets leave in arrival order; a packet that finds fewer
// tokens than its size waits until enough have accumulated at rate_bps. The
// return value is the wait (departure minus arrival), the delay to add.
// The waveform's level L scales the limit's strength: the bucket fills at
// rate_bps / L, so L = 1 is the requested rate and a small L hardly limits.
// At level 0 packets pass with no wait (the bucket keeps refilling at
// rate_bps, capped at burst_bytes). A packet that would wait longer than
// max_wait_ns does not join the backlog: delay_ns returns kBacklogFull and
// the caller drops it (a tail drop, as a bounded queue does), so a flood
// faster than the rate never queues packets for minutes or hours.
class RateLimit {
 public:
  static constexpr int64_t kBacklogFull = -1;
  explicit RateLimit(const RateLimitSpec& spec);
  int64_t delay_ns(int64_t now_ns, int64_t bytes);

 private:
  RateLimitSpec spec_;
  int64_t last_departure_ns_ = 0;
  double tokens_bytes_ = 0.0;
  bool started_ = false;
};

}  // namespace nabla::injector
