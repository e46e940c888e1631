#include "nabla/injector/engine.hh"

#include <netinet/in.h>
#include <netinet/ip.h>
#include <pthread.h>
#include <sched.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <system_error>

#include "nabla/common/clock.hh"
#include "nabla/common/error.hh"
#include "nabla/common/log.hh"
#include "nabla/injector/iptables_rules.hh"

namespace nabla::injector {

namespace {

constexpr uint64_t kTimerTag = 0;
constexpr uint64_t kWakeTag = 1;
constexpr uint64_t kFirstSlotTag = 2;  // epoll data = slot id + this
constexpr int64_t kHousekeepingNs = 100'000'000;
// The loop's first self-calibrated lead: this many sleeps of this period
// before it serves packets (about 6 ms).
constexpr int kProbeWakeups = 24;
constexpr int64_t kProbePeriodNs = 250'000;

}  // namespace

DelayEngine::DelayEngine(EngineOptions options)
    : options_(options), wheel_(common::monotonic_ns()), lateness_(options.lateness) {
  epoll_ = common::FileDescriptor(
      common::check_syscall("epoll_create1", ::epoll_create1(EPOLL_CLOEXEC)));
  timer_fd_ = common::FileDescriptor(common::check_syscall(
      "timerfd_create", ::timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK)));
  wake_fd_ = common::FileDescriptor(
      common::check_syscall("eventfd", ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)));
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = kTimerTag;
  common::check_syscall("epoll_ctl(timerfd)",
                        ::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, timer_fd_.get(), &ev));
  ev.data.u64 = kWakeTag;
  common::check_syscall("epoll_ctl(eventfd)",
                        ::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, wake_fd_.get(), &ev));
}

DelayEngine::~DelayEngine() {
  stop();
  std::lock_guard lock(mutex_);
  for (auto& [id, slot] : slots_) {
    for (auto& o : slot.outstanding) {
      if (o.state == IdState::kHeld) {
        o.state = IdState::kReleasing;
        slot.releasing.push_back(o.id);
      }
    }
    release_marked(slot);
  }
}

void DelayEngine::start() {
  running_ = true;
  thread_ = std::thread([this] { run(); });
}

void DelayEngine::stop() noexcept {
  if (!running_.exchange(false)) return;
  const uint64_t one = 1;
  if (::write(wake_fd_.get(), &one, sizeof one) < 0) {
    common::log_warn("engine: wake write failed: ", std::strerror(errno));
  }
  if (thread_.joinable()) thread_.join();
}

uint64_t DelayEngine::add(std::unique_ptr<NfQueue> queue,
                          std::unique_ptr<InjectionPipeline> pipeline) {
  std::lock_guard lock(mutex_);
  const uint64_t id = next_slot_++;
  const int fd = queue->fd();
  Slot slot;
  slot.queue_maxlen = queue->config().queue_maxlen;
  const bool spin = pipeline->config().release == Release::kSpin;
  slot.spin = spin;
  slot.queue = std::move(queue);
  slot.pipeline = std::move(pipeline);
  slots_.emplace(id, std::move(slot));
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = id + kFirstSlotTag;
  if (::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, fd, &ev) != 0) {
    const int err = errno;
    slots_.erase(id);
    throw std::system_error(err, std::system_category(), "epoll_ctl(nfqueue)");
  }
  if (spin) ++spinning_slots_;
  return id;
}

DelayEngine::Detached DelayEngine::remove(uint64_t slot_id) {
  std::lock_guard lock(mutex_);
  auto it = slots_.find(slot_id);
  if (it == slots_.end()) return {};
  Slot& slot = it->second;
  ::epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, slot.queue->fd(), nullptr);
  // Drain what already reached the socket so it is released, not dropped.
  on_readable(slot_id, slot);
  for (auto& o : slot.outstanding) {
    if (o.state == IdState::kHeld) {
      o.state = IdState::kReleasing;
      slot.releasing.push_back(o.id);
    }
  }
  release_marked(slot);
  Detached out{std::move(slot.queue), std::move(slot.pipeline)};
  if (slot.spin) --spinning_slots_;
  slots_.erase(it);
  return out;
}

bool DelayEngine::with_slot(uint64_t slot_id,
                            const std::function<void(InjectionPipeline&, const QueueView&)>& fn) {
  std::lock_guard lock(mutex_);
  auto it = slots_.find(slot_id);
  if (it == slots_.end()) return false;
  QueueView view{it->second.queue->counters(), it->second.held.size(), it->second.queue_maxlen};
  fn(*it->second.pipeline, view);
  return true;
}

void DelayEngine::on_packet(uint64_t slot_id, Slot& slot, const QueuedPacket& packet,
                            int64_t arrival_ns, int64_t now_ns) {
  InjectionPipeline& pipeline = *slot.pipeline;
  PacketCounters& counters = pipeline.accounting().counters();
  ++counters.packets;
  counters.bytes += packet.original_length;
  PacketPlan plan = pipeline.plan(arrival_ns, packet.payload, packet.original_length);
  if (plan.drop) {
    ++counters.dropped;
    slot.queue->verdict(packet.id, NfQueue::kDrop);
    return;
  }
  Held held;
  held.arrival_ns = arrival_ns;
  held.wave = plan.wave;
  const bool whole = packet.payload.size() == packet.original_length;
  if (plan.corrupt && whole) {
    held.rewritten.assign(packet.payload.begin(), packet.payload.end());
    const bool fix = pipeline.config().corrupt->fix_checksum;
    if (corrupt_packet(held.rewritten, pipeline.corruption_rng(), fix, packet.checksum_not_ready)) {
      ++counters.corrupted;
    } else {
      held.rewritten.clear();
    }
  }
  if (plan.duplicate && whole && !packet.gso && !packet.payload.empty() &&
      ((packet.payload[0] >> 4) == 4 || (packet.payload[0] >> 4) == 6)) {
    const auto& src = held.rewritten.empty()
                          ? std::vector<uint8_t>(packet.payload.begin(), packet.payload.end())
                          : held.rewritten;
    held.copy = src;
    // A locally sent packet may carry only the pseudo-header sum
    // (CHECKSUM_PARTIAL); the raw-socket copy must be complete.
    if (packet.checksum_not_ready && held.rewritten.empty()) fix_transport_checksum(held.copy);
    // Counted when the copy is sent (send_duplicate), not when planned.
  }
  if (plan.reordered) ++counters.reordered;
  if (plan.release_ns <= now_ns) {
    // A held packet of this flow may have come due after this pass's first
    // fire_timers() but before this packet's arrival stamp (by the flow's
    // FIFO rule its release is <= this one's). Release it first, or this
    // packet overtakes it (at a square wave's falling edge, where held
    // packets come due together, that reorders TCP segments). This pass's
    // earlier due packets go out before, so a batch verdict for the held
    // ones cannot swallow their ids.
    if (wheel_.next_deadline_ns() <= now_ns) {
      release_immediate(slot);
      fire_timers(now_ns);
    }
    // Due now: no wheel. Plain packets are accepted together at the end of
    // this receive pass (one batch verdict when nothing older is held).
    if (held.rewritten.empty() && held.copy.empty()) {
      slot.immediate.push_back({packet.id, plan.wave, arrival_ns});
      return;
    }
    slot.queue->verdict(packet.id, NfQueue::kAccept, held.rewritten);
    pipeline.accounting().record_delay(common::monotonic_ns() - arrival_ns, plan.wave);
    if (!held.copy.empty() && send_duplicate(held.copy)) ++counters.duplicated;
    return;
  }
  const int64_t charge =
      static_cast<int64_t>(packet.original_length) + EngineOptions::kHeldPacketOverhead;
  if (held_bytes_ + charge > options_.max_held_bytes) {
    ++counters.queue_full;
    slot.queue->verdict(packet.id, NfQueue::kAccept, held.rewritten);
    pipeline.accounting().record_delay(common::monotonic_ns() - arrival_ns, plan.wave);
    return;
  }
  held.charge = charge;
  held_bytes_ += charge;
  ++counters.delayed;
  held.timer = wheel_.schedule(plan.release_ns, (slot_id << 32) | packet.id);
  slot.held.emplace(packet.id, std::move(held));
  slot.outstanding.push_back({packet.id, IdState::kHeld});
  if (slot.held.size() >= slot.queue_maxlen && slot.queue_maxlen > 0) ++counters.queue_full;
}

void DelayEngine::on_readable(uint64_t slot_id, Slot& slot) {
  const int64_t now_ns = common::monotonic_ns();
  // Release everything already due first: a packet that arrives now with no
  // delay left (release == now) must not overtake a held packet of its flow
  // whose deadline passed while we were busy.
  fire_timers(now_ns);
  // Each packet's delay counts from the kernel's stamp when it sent one
  // (QueuedPacket::queued_ns), else from the receive call (never early).
  if (slot.queue->receive([&](const QueuedPacket& packet) {
        const int64_t arrival = packet.queued_ns != 0 ? packet.queued_ns : packet.received_ns;
        on_packet(slot_id, slot, packet, arrival, packet.received_ns);
      }) > 0) {
    last_packet_ns_ = now_ns;
  }
  release_immediate(slot);
  slot.queue->flush();
  PacketCounters& counters = slot.pipeline->accounting().counters();
  counters.enobufs = slot.queue->counters().enobufs + slot.queue->counters().id_gaps;
  counters.verdict_errors = slot.queue->counters().send_errors;
}

void DelayEngine::release_immediate(Slot& slot) {
  if (slot.immediate.empty()) return;
  const uint32_t last = slot.immediate.back().id;  // ids ascend
  // A batch accepts every queued id <= last: only if no held packet is among them.
  bool older_held = false;
  for (const auto& o : slot.outstanding) {
    if (o.state == IdState::kHeld) {
      older_held = packet_id_before(o.id, last);
      break;
    }
  }
  if (slot.immediate.size() >= 2 && !older_held) {
    slot.queue->batch_verdict(last, NfQueue::kAccept);
  } else {
    for (const auto& p : slot.immediate) slot.queue->verdict(p.id, NfQueue::kAccept);
  }
  slot.queue->flush();
  const int64_t verdict_ns = common::monotonic_ns();
  for (const auto& p : slot.immediate) {
    slot.pipeline->accounting().record_delay(verdict_ns - p.arrival_ns, p.wave);
  }
  slot.immediate.clear();
}

size_t DelayEngine::fire_timers(int64_t now_ns) {
  std::vector<Slot*> touched;
  const size_t fired = wheel_.advance(now_ns, [&](const ExpiredTimer& t) {
    const uint64_t slot_id = t.payload >> 32;
    const auto id = static_cast<uint32_t>(t.payload & 0xffffffffu);
    auto it = slots_.find(slot_id);
    if (it == slots_.end()) return;
    Slot& slot = it->second;
    auto pos = std::lower_bound(
        slot.outstanding.begin(), slot.outstanding.end(), id,
        [](const Outstanding& o, uint32_t v) { return packet_id_before(o.id, v); });
    if (pos == slot.outstanding.end() || pos->id != id || pos->state != IdState::kHeld) return;
    pos->state = IdState::kReleasing;
    if (slot.releasing.empty()) touched.push_back(&slot);
    slot.releasing.push_back(id);
  });
  for (Slot* slot : touched) release_marked(*slot);
  return fired;
}

void DelayEngine::release_marked(Slot& slot) {
  if (slot.releasing.empty()) return;
  // The contiguous prefix of ids that are releasing now or already verdicted
  // can go as one batch verdict at the last releasing id in it.
  uint32_t batch_id = 0;
  size_t batch_count = 0;
  size_t prefix = 0;
  for (const auto& o : slot.outstanding) {
    if (o.state == IdState::kHeld) break;
    if (o.state == IdState::kReleasing) {
      batch_id = o.id;
      ++batch_count;
    }
    ++prefix;
  }
  InjectionPipeline& pipeline = *slot.pipeline;
  // Verdicts go out in id order (= arrival order within a flow): first the
  // batch for the prefix, then single verdicts for the rest. A rewritten
  // packet needs its own verdict, so a prefix holding one is not batched.
  std::sort(slot.releasing.begin(), slot.releasing.end(), packet_id_before);
  bool batch = batch_count >= 2;
  for (uint32_t id : slot.releasing) {
    if (packet_id_before(batch_id, id)) break;
    if (!slot.held.at(id).rewritten.empty()) batch = false;
  }
  if (batch) slot.queue->batch_verdict(batch_id, NfQueue::kAccept);
  for (uint32_t id : slot.releasing) {
    if (batch && !packet_id_before(batch_id, id)) continue;
    slot.queue->verdict(id, NfQueue::kAccept, slot.held.at(id).rewritten);
  }
  slot.queue->flush();
  const int64_t verdict_ns = common::monotonic_ns();
  for (uint32_t id : slot.releasing) {
    auto it = slot.held.find(id);
    pipeline.accounting().record_delay(verdict_ns - it->second.arrival_ns, it->second.wave);
    if (!it->second.copy.empty() && send_duplicate(it->second.copy)) {
      ++pipeline.accounting().counters().duplicated;
    }
    wheel_.cancel(it->second.timer);  // no-op when it fired
    held_bytes_ -= it->second.charge;
    slot.held.erase(it);
  }
  for (auto& o : slot.outstanding) {
    if (o.state == IdState::kReleasing) o.state = IdState::kVerdicted;
  }
  slot.outstanding.erase(slot.outstanding.begin(),
                         slot.outstanding.begin() + static_cast<std::ptrdiff_t>(prefix));
  slot.releasing.clear();
  PacketCounters& counters = pipeline.accounting().counters();
  counters.verdict_errors = slot.queue->counters().send_errors;
}

namespace {

// A raw socket that sends whole IP packets (IPPROTO_RAW implies the header is
// ours, for IPv6 too since Linux 4.5), marked so our rules skip the copy.
common::FileDescriptor open_raw(int family) {
  common::FileDescriptor fd(::socket(family, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_RAW));
  if (fd) {
    const uint32_t mark = kNablaPacketMark;
    ::setsockopt(fd.get(), SOL_SOCKET, SO_MARK, &mark, sizeof mark);
  }
  return fd;
}

}  // namespace

void DelayEngine::open_duplicate_socket(int family) {
  std::lock_guard lock(mutex_);
  common::FileDescriptor& raw = family == AF_INET6 ? raw6_ : raw4_;
  if (raw) return;
  raw = open_raw(family);
  if (!raw) {
    throw std::system_error(
        errno, std::system_category(),
        family == AF_INET6 ? "socket(AF_INET6, SOCK_RAW)" : "socket(AF_INET, SOCK_RAW)");
  }
}

bool DelayEngine::send_duplicate(const std::vector<uint8_t>& packet) {
  if (packet.empty()) return false;
  const int version = packet[0] >> 4;
  ssize_t sent = -1;
  if (version == 4 && packet.size() >= 20) {
    if (!raw4_) raw4_ = open_raw(AF_INET);
    if (!raw4_) return false;
    sockaddr_in dst{};
    dst.sin_family = AF_INET;
    std::memcpy(&dst.sin_addr, &packet[16], 4);
    sent = ::sendto(raw4_.get(), packet.data(), packet.size(), MSG_DONTWAIT,
                    reinterpret_cast<const sockaddr*>(&dst), sizeof dst);
  } else if (version == 6 && packet.size() >= 40) {
    if (!raw6_) raw6_ = open_raw(AF_INET6);
    if (!raw6_) return false;
    sockaddr_in6 dst{};
    dst.sin6_family = AF_INET6;
    std::memcpy(&dst.sin6_addr, &packet[24], 16);
    sent = ::sendto(raw6_.get(), packet.data(), packet.size(), MSG_DONTWAIT,
                    reinterpret_cast<const sockaddr*>(&dst), sizeof dst);
  }
  return sent == static_cast<ssize_t>(packet.size());
}

int64_t DelayEngine::lead_ns() const {
  return options_.spin_ns ? *options_.spin_ns : lateness_.lead_ns();
}

void DelayEngine::record_wakeup(int64_t wait_start_ns, int64_t awake_ns) {
  if (armed_ns_ > 0 && wait_start_ns < armed_ns_) lateness_.record(awake_ns - armed_ns_);
}

TimerReport DelayEngine::timer_report() {
  std::lock_guard lock(mutex_);
  TimerReport r;
  r.self_calibrated = !options_.spin_ns.has_value();
  r.lead_ns = lead_ns();
  r.lateness = lateness_.summary();
  r.polled_ns = polled_ns_;
  r.uptime_ns = started_ns_ > 0 ? common::monotonic_ns() - started_ns_ : 0;
  return r;
}

int DelayEngine::arm_timer(int64_t now_ns) {
  // Housekeeping and shutdown checks: with nothing held the timerfd wakes the
  // loop at the next housekeeping tick (a wake-up lateness sample while
  // idle); this epoll timeout is only the fallback.
  constexpr int kIdleTimeoutMs = 150;
  if (now_ns - poll_window_start_ns_ >= kPollWindowNs) {
    poll_window_start_ns_ = now_ns;
    busy_ns_ = 0;
  }
  const bool may_poll = busy_ns_ < kBusyBudgetNs;
  const int64_t next = wheel_.next_deadline_ns();
  int64_t target = last_housekeeping_ns_ + kHousekeepingNs;
  int timeout_ms = kIdleTimeoutMs;
  if (next != TimerWheel::kNoDeadline) {
    target = next - (may_poll && spinning_slots_ > 0 ? lead_ns() : 0);
    if (target <= now_ns) {
      // Due, or inside the spin window: poll; the timer is not needed.
      target = 0;
      timeout_ms = 0;
    }
  }
  if (may_poll && options_.busy_poll_ns > 0 && now_ns - last_packet_ns_ < options_.busy_poll_ns) {
    timeout_ms = 0;
  }
  // Re-arm only when the target moved: most passes leave it where it was.
  if (target != armed_ns_) {
    itimerspec spec{};
    spec.it_value.tv_sec = target / 1'000'000'000;
    spec.it_value.tv_nsec = target % 1'000'000'000;
    ::timerfd_settime(timer_fd_.get(), TFD_TIMER_ABSTIME, &spec, nullptr);
    armed_ns_ = target;
  }
  return timeout_ms;
}

void DelayEngine::run() {
  ::prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
  if (options_.realtime_priority > 0) {
    sched_param param{};
    param.sched_priority = options_.realtime_priority;
    const int err = ::pthread_setschedparam(::pthread_self(), SCHED_FIFO, &param);
    if (err != 0) {
      common::log_warn("engine: SCHED_FIFO priority ", options_.realtime_priority,
                       " refused: ", std::strerror(err), "; running unprioritised");
    }
  }
  if (!options_.spin_ns) {
    // The first lead comes from real sleeps of this thread, at its priority.
    common::WakeupLateness probe(options_.lateness);
    common::probe_wakeup_lateness(probe, kProbeWakeups, kProbePeriodNs);
    std::lock_guard lock(mutex_);
    lateness_ = probe;
  }
  {
    std::lock_guard lock(mutex_);
    started_ns_ = common::monotonic_ns();
    last_housekeeping_ns_ = started_ns_;
  }
  epoll_event events[64];
  int timeout_ms = 0;
  while (running_) {
    const int64_t wait_start_ns = common::monotonic_ns();
    const int n = ::epoll_wait(epoll_.get(), events, 64, timeout_ms);
    // Awake from here (a poll counts from before its epoll_wait).
    const int64_t awake_ns = timeout_ms == 0 ? wait_start_ns : common::monotonic_ns();
    if (n < 0 && errno != EINTR) {
      common::log_error("engine: epoll_wait: ", std::strerror(errno));
      break;
    }
    if (timeout_ms != 0 || n > 0) ++wakeups_;  // polls that find nothing are not wake-ups
    std::lock_guard lock(mutex_);
    for (int i = 0; i < n; ++i) {
      const uint64_t tag = events[i].data.u64;
      if (tag == kTimerTag) {
        if (timeout_ms != 0) record_wakeup(wait_start_ns, awake_ns);
        uint64_t expirations = 0;
        if (::read(timer_fd_.get(), &expirations, sizeof expirations) < 0) {
          // EAGAIN after a re-arm race: harmless.
        }
        armed_ns_ = -1;
      } else if (tag == kWakeTag) {
        uint64_t value = 0;
        if (::read(wake_fd_.get(), &value, sizeof value) < 0) {
        }
      } else {
        auto it = slots_.find(tag - kFirstSlotTag);
        if (it != slots_.end()) on_readable(it->first, it->second);
      }
    }
    const int64_t now = common::monotonic_ns();
    fire_timers(now);
    if (now - last_housekeeping_ns_ >= kHousekeepingNs) {
      for (auto& [id, slot] : slots_) slot.pipeline->flow_order().forget_released(now);
      last_housekeeping_ns_ = now;
    }
    const int64_t end_ns = common::monotonic_ns();
    busy_ns_ += end_ns - awake_ns;
    if (timeout_ms == 0 && n == 0) polled_ns_ += end_ns - wait_start_ns;
    timeout_ms = arm_timer(end_ns);
  }
}

}  // namespace nabla::injector
