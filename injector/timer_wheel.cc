#include "nabla/injector/timer_wheel.hh"

#include <algorithm>

namespace nabla::injector {

namespace {

int64_t tick_of(int64_t ns) {
  return ns <= 0 ? 0 : ns / TimerWheel::kTickNs;
}

}  // namespace

TimerWheel::TimerWheel(int64_t now_ns)
    : heads_(kSlotCount, kNil), current_tick_(tick_of(now_ns)), last_now_ns_(now_ns) {}

int TimerWheel::level_shift(int level) {
  return level == 0 ? 0 : kLevel0Bits + (level - 1) * kUpperBits;
}

int TimerWheel::slot_base(int level) {
  return level == 0 ? 0 : kLevel0Slots + (level - 1) * kUpperSlots;
}

int TimerWheel::level_of_slot(int slot) {
  return slot < kLevel0Slots ? 0 : 1 + (slot - kLevel0Slots) / kUpperSlots;
}

uint32_t TimerWheel::allocate_node() {
  if (!free_.empty()) {
    uint32_t index = free_.back();
    free_.pop_back();
    return index;
  }
  nodes_.emplace_back();
  return static_cast<uint32_t>(nodes_.size() - 1);
}

void TimerWheel::free_node(uint32_t index) {
  Node& n = nodes_[index];
  n.state = State::kFree;
  ++n.generation;
  free_.push_back(index);
}

void TimerWheel::place(uint32_t index) {
  Node& n = nodes_[index];
  const int64_t tick = std::max(tick_of(n.deadline_ns), current_tick_);
  const int64_t delta = tick - current_tick_;
  int slot;
  if (delta < kLevel0Slots) {
    slot = static_cast<int>(tick & (kLevel0Slots - 1));
  } else {
    int level = 1;
    while (level < kUpperLevels && delta >= (int64_t{1} << level_shift(level + 1))) ++level;
    int64_t placed_tick = tick;
    const int64_t max_delta = (int64_t{1} << level_shift(kUpperLevels + 1)) - 1;
    if (delta > max_delta) placed_tick = current_tick_ + max_delta;  // parked; re-placed later
    slot = slot_base(level) +
           static_cast<int>((placed_tick >> level_shift(level)) & (kUpperSlots - 1));
  }
  n.slot = static_cast<uint16_t>(slot);
  n.prev = kNil;
  n.next = heads_[slot];
  if (n.next != kNil) nodes_[n.next].prev = index;
  heads_[slot] = index;
  n.state = State::kLinked;
  ++level_count_[level_of_slot(slot)];
}

void TimerWheel::unlink(uint32_t index) {
  Node& n = nodes_[index];
  if (n.prev != kNil) {
    nodes_[n.prev].next = n.next;
  } else {
    heads_[n.slot] = n.next;
  }
  if (n.next != kNil) nodes_[n.next].prev = n.prev;
  n.prev = n.next = kNil;
  --level_count_[level_of_slot(n.slot)];
}

TimerHandle TimerWheel::schedule(int64_t deadline_ns, uint64_t payload) {
  const uint32_t index = allocate_node();
  Node& n = nodes_[index];
  n.deadline_ns = deadline_ns;
  n.seq = next_seq_++;
  n.payload = payload;
  place(index);
  ++pending_;
  if (cache_valid_) cached_next_ = std::min(cached_next_, deadline_ns);
  return TimerHandle{index, nodes_[index].generation};
}

bool TimerWheel::cancel(TimerHandle handle) {
  if (!handle.valid() || handle.index >= nodes_.size()) return false;
  Node& n = nodes_[handle.index];
  if (n.generation != handle.generation) return false;
  if (n.state == State::kLinked) {
    unlink(handle.index);
    if (n.deadline_ns <= cached_next_) cache_valid_ = false;
    free_node(handle.index);
    --pending_;
    return true;
  }
  if (n.state == State::kFiring) {  // taken for the current batch, not yet fired
    n.state = State::kCancelled;
    --pending_;
    return true;
  }
  return false;
}

void TimerWheel::cascade() {
  // Called when current_tick_ has just become a multiple of 256: the level-1
  // slot for this block empties into level 0; if that slot index is 0 the
  // level-2 slot empties too, and so on up.
  for (int level = 1; level <= kUpperLevels; ++level) {
    const int index = static_cast<int>((current_tick_ >> level_shift(level)) & (kUpperSlots - 1));
    const int slot = slot_base(level) + index;
    uint32_t node = heads_[slot];
    heads_[slot] = kNil;
    while (node != kNil) {
      const uint32_t next = nodes_[node].next;
      --level_count_[level];
      place(node);
      node = next;
    }
    if (index != 0) break;
  }
}

void TimerWheel::step_toward(int64_t limit_tick) {
  // One move of current_tick_ toward limit_tick (> current_tick_). It never
  // passes a level-0 slot that may hold timers: with level 0 non-empty it moves
  // one tick; with levels 0..k-1 empty it jumps to the boundary at which level
  // k's next slot cascades (or to the limit, if that comes first).
  int empty_levels = 0;
  while (empty_levels < kLevels && level_count_[empty_levels] == 0) ++empty_levels;
  if (empty_levels == kLevels) {
    current_tick_ = limit_tick;  // nothing pending anywhere
    return;
  }
  int64_t next = current_tick_ + 1;
  if (empty_levels > 0) {
    const int64_t width = int64_t{1} << level_shift(empty_levels);
    next = (current_tick_ / width + 1) * width;
  }
  if (next > limit_tick) {
    current_tick_ = limit_tick;  // no boundary crossed on the way
    return;
  }
  current_tick_ = next;
  if ((current_tick_ & (kLevel0Slots - 1)) == 0) cascade();
}

size_t TimerWheel::fire_current_tick(int64_t now_ns,
                                     const std::function<void(const ExpiredTimer&)>& on_expired) {
  size_t fired = 0;
  const int slot = static_cast<int>(current_tick_ & (kLevel0Slots - 1));
  for (;;) {
    batch_.clear();
    for (uint32_t node = heads_[slot]; node != kNil; node = nodes_[node].next) {
      if (nodes_[node].deadline_ns <= now_ns) batch_.push_back(node);
    }
    if (batch_.empty()) return fired;
    for (uint32_t node : batch_) {
      unlink(node);
      nodes_[node].state = State::kFiring;
    }
    cache_valid_ = false;
    std::sort(batch_.begin(), batch_.end(), [this](uint32_t a, uint32_t b) {
      const Node& x = nodes_[a];
      const Node& y = nodes_[b];
      return x.deadline_ns != y.deadline_ns ? x.deadline_ns < y.deadline_ns : x.seq < y.seq;
    });
    // The callback may schedule (growing nodes_) or cancel; copy the batch so
    // a reentrant advance-free mutation cannot invalidate our iteration.
    const std::vector<uint32_t> taken = batch_;
    for (uint32_t node : taken) {
      if (nodes_[node].state == State::kFiring) {
        const ExpiredTimer expired{nodes_[node].deadline_ns, nodes_[node].payload};
        --pending_;
        ++fired;
        on_expired(expired);
      }
      free_node(node);
    }
  }
}

size_t TimerWheel::advance(int64_t now_ns,
                           const std::function<void(const ExpiredTimer&)>& on_expired) {
  now_ns = std::max(now_ns, last_now_ns_);
  last_now_ns_ = now_ns;
  const int64_t now_tick = tick_of(now_ns);
  size_t fired = 0;
  for (;;) {
    fired += fire_current_tick(now_ns, on_expired);
    if (current_tick_ >= now_tick) break;
    step_toward(now_tick);
  }
  return fired;
}

int64_t TimerWheel::compute_next_deadline() const {
  if (pending_ == 0) return kNoDeadline;
  int64_t best = kNoDeadline;
  // Level 0 holds ticks current .. current+255, one tick per slot: the first
  // non-empty slot from the current one holds the level's minimum.
  if (level_count_[0] != 0) {
    for (int i = 0; i < kLevel0Slots; ++i) {
      const int slot = static_cast<int>((current_tick_ + i) & (kLevel0Slots - 1));
      if (heads_[slot] == kNil) continue;
      for (uint32_t node = heads_[slot]; node != kNil; node = nodes_[node].next) {
        best = std::min(best, nodes_[node].deadline_ns);
      }
      break;
    }
  }
  // An upper level holds blocks strictly after the current one, in slot order
  // starting after the current index; a block that starts after `best` cannot
  // improve it.
  for (int level = 1; level <= kUpperLevels; ++level) {
    if (level_count_[level] == 0) continue;
    const int shift = level_shift(level);
    const int64_t current_block = current_tick_ >> shift;
    for (int i = 1; i <= kUpperSlots; ++i) {
      const int64_t block = current_block + i;
      const int slot = slot_base(level) + static_cast<int>(block & (kUpperSlots - 1));
      if (heads_[slot] == kNil) continue;
      if ((block << shift) * kTickNs > best) break;
      for (uint32_t node = heads_[slot]; node != kNil; node = nodes_[node].next) {
        best = std::min(best, nodes_[node].deadline_ns);
      }
      break;
    }
  }
  return best;
}

int64_t TimerWheel::next_deadline_ns() const {
  if (!cache_valid_) {
    cached_next_ = compute_next_deadline();
    cache_valid_ = true;
  }
  return cached_next_;
}

}  // namespace nabla::injector
