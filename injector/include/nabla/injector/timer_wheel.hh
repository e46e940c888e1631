#pragma once
// Hierarchical hashed timer wheel (Varghese & Lauck, scheme 7) holding the ids
// of delayed packets until their release time.
//
// Geometry (decision): level 0 has 256 slots of 1 µs (a 256 µs window), levels
// 1..4 have 64 slots each, every level 64 times coarser than the one below:
//   level 0: 1 µs slots,      span 256 µs
//   level 1: 256 µs slots,    span 16.4 ms
//   level 2: 16.4 ms slots,   span 1.05 s
//   level 3: 1.05 s slots,    span 67 s
//   level 4: 67 s slots,      span 71.6 min
// Why: injected delays are 0.1 ms .. a few s. A fine 256-slot first level makes
// the common "fire within the next quarter millisecond" case a single slot
// lookup at µs resolution, and the 64-way upper levels keep the whole wheel at
// 512 slot heads (4 KiB) while covering over an hour. A 20 ms delay is
// cascaded twice (level 2 -> 1 -> 0) over its life; cascading is O(1) per timer
// per level. Deadlines beyond the span are parked in the top level and
// re-placed when that slot cascades (the stored deadline is never clamped).
//
// Firing order: every timer with deadline_ns <= now_ns fires in deadline order;
// equal deadlines fire in insertion order. Timers are nanosecond-exact: a timer
// in the current microsecond fires only once now_ns has reached it.
//
// Time is an input: the wheel never reads a clock. Nodes live in a pooled
// vector with a free list, so a million timers cost one allocation burst, and
// handles carry a generation so a stale handle cannot cancel a recycled node.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <vector>

namespace nabla::injector {

struct TimerHandle {
  uint32_t index = std::numeric_limits<uint32_t>::max();
  uint32_t generation = 0;
  bool valid() const { return index != std::numeric_limits<uint32_t>::max(); }
};

struct ExpiredTimer {
  int64_t deadline_ns;
  uint64_t payload;
};

class TimerWheel {
 public:
  static constexpr int64_t kTickNs = 1000;  // level-0 resolution: 1 µs
  static constexpr int kLevel0Bits = 8;     // 256 slots
  static constexpr int kUpperBits = 6;      // 64 slots per upper level
  static constexpr int kUpperLevels = 4;
  static constexpr int kLevels = 1 + kUpperLevels;
  static constexpr int64_t kNoDeadline = std::numeric_limits<int64_t>::max();

  // now_ns: the current time; deadlines before it fire on the next advance().
  explicit TimerWheel(int64_t now_ns = 0);

  // Adds a timer. Deadlines in the past are due at the next advance().
  TimerHandle schedule(int64_t deadline_ns, uint64_t payload);

  // Removes a pending timer. Returns false if it already fired, was cancelled,
  // or the handle is stale. Safe to call from inside an advance() callback.
  bool cancel(TimerHandle handle);

  // Fires every timer with deadline_ns <= now_ns, in deadline order (ties in
  // insertion order), and returns how many fired. The callback may schedule
  // and cancel; a timer it schedules that is already due fires in this same
  // call (after the ones already taken for the current microsecond).
  // now_ns earlier than a previous advance is treated as that earlier time.
  size_t advance(int64_t now_ns, const std::function<void(const ExpiredTimer&)>& on_expired);

  // Earliest pending deadline, or kNoDeadline when empty. Meant for arming an
  // absolute timerfd after each advance(). Cached between mutations.
  int64_t next_deadline_ns() const;

  size_t size() const { return pending_; }
  bool empty() const { return pending_ == 0; }

 private:
  static constexpr uint32_t kNil = std::numeric_limits<uint32_t>::max();
  static constexpr int kLevel0Slots = 1 << kLevel0Bits;
  static constexpr int kUpperSlots = 1 << kUpperBits;
  static constexpr int kSlotCount = kLevel0Slots + kUpperLevels * kUpperSlots;

  enum class State : uint8_t { kFree, kLinked, kFiring, kCancelled };

  struct Node {
    int64_t deadline_ns = 0;
    uint64_t seq = 0;
    uint64_t payload = 0;
    uint32_t prev = kNil;
    uint32_t next = kNil;
    uint32_t generation = 0;
    uint16_t slot = 0;
    State state = State::kFree;
  };

  static int level_shift(int level);  // log2 of a slot's width in ticks
  static int slot_base(int level);    // index of the level's first slot head
  static int level_of_slot(int slot);

  uint32_t allocate_node();
  void free_node(uint32_t index);
  void place(uint32_t index);  // links a node into the slot its deadline maps to
  void unlink(uint32_t index);
  void cascade();                        // at a level-0 wrap, redistributes upper slots
  void step_toward(int64_t limit_tick);  // one move forward, cascading at boundaries
  size_t fire_current_tick(int64_t now_ns,
                           const std::function<void(const ExpiredTimer&)>& on_expired);
  int64_t compute_next_deadline() const;

  std::vector<Node> nodes_;
  std::vector<uint32_t> free_;
  std::vector<uint32_t> heads_;
  int64_t level_count_[kLevels] = {};
  int64_t current_tick_;
  int64_t last_now_ns_;
  uint64_t next_seq_ = 0;
  size_t pending_ = 0;
  std::vector<uint32_t> batch_;  // scratch for one tick's due timers
  mutable int64_t cached_next_ = kNoDeadline;
  mutable bool cache_valid_ = true;
};

}  // namespace nabla::injector
