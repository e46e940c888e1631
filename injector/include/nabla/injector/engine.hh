#pragma once
// The data plane: one thread running an epoll loop over every injection's
// NFQUEUE socket, an absolute-deadline timerfd (CLOCK_MONOTONIC,
// TFD_TIMER_ABSTIME) armed at the timer wheel's next deadline, and an eventfd
// for shutdown. The timer is armed early by a lead and the loop spins to the
// deadline: by default the lead is self-calibrated from the loop's own
// recent timer wake-up lateness (common/wakeup_lateness.hh, docs/timing.md),
// or fixed by EngineOptions::spin_ns. Timer slack is set to 1 ns. Packet callbacks never sleep: a
// packet is either verdicted at once (drop, zero delay) or put on the timer wheel.
//
// Verdicts: when every held id of a queue up to some id is being released in
// the same pass, one NFQNL_MSG_VERDICT_BATCH covers them; the others get
// individual verdicts in the same pass. Because a batch never covers a packet
// that is not due, nothing can starve behind it, so no separate periodic
// flush of deferred verdicts is needed (a 100 ms housekeeping tick trims the
// flow tables).
//
// Control threads add and remove injections and read their stats through the
// methods below; they share state with the loop under one mutex, which the
// loop holds only while processing (never while waiting).
#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>
#include <vector>

#include "nabla/common/fd.hh"
#include "nabla/common/wakeup_lateness.hh"
#include "nabla/injector/injection.hh"
#include "nabla/injector/nfqueue.hh"
#include "nabla/injector/timer_wheel.hh"

namespace nabla::injector {

struct EngineOptions {
  // Busy-wait this long before each deadline (precision): the timerfd is
  // armed spin_ns early and the loop then polls (epoll_wait with timeout 0)
  // until the deadline, so packets arriving meanwhile are still taken at once.
  // nullopt (the default): self-calibrated, the lead is a high quantile of
  // the loop's own recent wake-up lateness (TimerReport).
  std::optional<int64_t> spin_ns;
  // After a pass that received packets, keep polling this long before
  // sleeping again: at high rates the next packet comes within microseconds,
  // and a sleep/wake-up per packet (an IPI and two context switches, costly
  // on a VM) would cost more than the packet itself. Costs CPU only while
  // traffic flows. 0 = off.
  int64_t busy_poll_ns = 0;
  // SCHED_FIFO priority of the loop thread (0 = normal scheduling). On a
  // loaded machine this is what keeps release times on schedule: the loop
  // sleeps in epoll_wait between deadlines, so it costs no CPU, and any spin
  // is bounded by the polling budget.
  int realtime_priority = 0;
  common::WakeupLatenessOptions lateness;  // of the self-calibrated lead
  // The packets every injection holds at once, in bytes (each counted as its
  // IP length plus kHeldPacketOverhead, an estimate of the kernel's own
  // per-packet memory): the kernel keeps a held packet, and a delayed fast
  // link would otherwise hold its rate times the delay. A packet that would
  // go past it is passed at once, as the kernel passes one its full queue
  // cannot take (fail-open), and counted in queue_full.
  int64_t max_held_bytes = kDefaultMaxHeldBytes;
  static constexpr int64_t kDefaultMaxHeldBytes = 256LL << 20;
  static constexpr int64_t kHeldPacketOverhead = 1024;
};

// How the loop times its releases, for daemon.info and --check.
struct TimerReport {
  bool self_calibrated = true;
  int64_t lead_ns = 0;  // the timer is armed this long before a deadline
  common::WakeupLatenessSummary lateness;
  int64_t polled_ns = 0;  // spent polling (spin windows, busy polling) since start
  int64_t uptime_ns = 0;  // since the loop started
};

// Counters of one injection as seen by the engine, besides the pipeline's.
struct QueueView {
  NfQueueCounters queue;
  size_t held = 0;  // packets currently delayed
  uint32_t queue_maxlen = 0;
};

class DelayEngine {
 public:
  explicit DelayEngine(EngineOptions options);
  // Stops the loop; every held packet is accepted first.
  ~DelayEngine();
  DelayEngine(const DelayEngine&) = delete;
  DelayEngine& operator=(const DelayEngine&) = delete;

  // Starts the loop thread (it stays in the caller's network namespace).
  void start();
  void stop() noexcept;

  // Hands over a bound queue and its pipeline; returns the slot id.
  uint64_t add(std::unique_ptr<NfQueue> queue, std::unique_ptr<InjectionPipeline> pipeline);
  // Accepts every packet the slot holds (now, in order), detaches the queue
  // from the loop and returns both so the caller can read final stats and
  // destroy them (unbinding the queue) after removing the rules.
  struct Detached {
    std::unique_ptr<NfQueue> queue;
    std::unique_ptr<InjectionPipeline> pipeline;
  };
  Detached remove(uint64_t slot);

  // Runs fn under the engine lock with the slot's pipeline and queue view.
  // Returns false if the slot does not exist.
  bool with_slot(uint64_t slot,
                 const std::function<void(InjectionPipeline&, const QueueView&)>& fn);

  // Opens, once, the raw socket (AF_INET or AF_INET6) that duplicates of
  // that family are re-sent through. Throws std::system_error when it
  // cannot: without CAP_NET_RAW the duplicate fault cannot work, and
  // inject.start refuses it rather than report copies it never sent.
  void open_duplicate_socket(int family);

  uint64_t loop_wakeups() const { return wakeups_.load(); }
  TimerReport timer_report();

 private:
  struct Held {
    int64_t arrival_ns = 0;
    int64_t charge = 0;  // its share of EngineOptions::max_held_bytes
    WavePoint wave;
    TimerHandle timer;
    std::vector<uint8_t> rewritten;  // replacement payload (corruption), else empty
    std::vector<uint8_t> copy;       // whole packet to duplicate, else empty
  };
  enum class IdState : uint8_t { kHeld, kReleasing, kVerdicted };
  struct Outstanding {
    uint32_t id;
    IdState state;
  };
  struct Slot {
    std::unique_ptr<NfQueue> queue;
    std::unique_ptr<InjectionPipeline> pipeline;
    std::unordered_map<uint32_t, Held> held;
    std::deque<Outstanding> outstanding;  // arrival order: ids ascending modulo 2^32
    std::vector<uint32_t> releasing;      // ids released in this pass
    // Zero-delay packets of this receive pass, accepted together at its end.
    struct Immediate {
      uint32_t id;
      WavePoint wave;
      int64_t arrival_ns;
    };
    std::vector<Immediate> immediate;
    uint32_t queue_maxlen = 0;
    bool spin = true;  // its injection asked for Release::kSpin
  };

  void run();
  void on_readable(uint64_t slot_id, Slot& slot);
  // arrival_ns: when the packet was queued (the kernel's stamp) or, without
  // one, received; the delay counts from it. now_ns: the receive call.
  void on_packet(uint64_t slot_id, Slot& slot, const QueuedPacket& packet, int64_t arrival_ns,
                 int64_t now_ns);
  size_t fire_timers(int64_t now_ns);  // returns how many timers fired
  void release_marked(Slot& slot);     // sends verdicts for slot.releasing
  void release_immediate(Slot& slot);
  // Arms the timerfd lead_ns() before the next deadline (or at the next
  // housekeeping tick when nothing is held); returns the epoll timeout
  // (0 = poll) for the next wait.
  int arm_timer(int64_t now_ns);
  int64_t lead_ns() const;
  // A timer expiry seen after a blocking wait that began before the armed
  // time is one wake-up lateness sample.
  void record_wakeup(int64_t wait_start_ns, int64_t awake_ns);
  // True when the copy went out whole; only then is it counted duplicated.
  bool send_duplicate(const std::vector<uint8_t>& packet);

  EngineOptions options_;
  int64_t held_bytes_ = 0;  // the charges of every slot's held packets
  std::mutex mutex_;
  std::map<uint64_t, Slot> slots_;
  // Slots whose injection asked for spinning releases: with none, the timer
  // is armed at each deadline itself and the loop never polls for it.
  size_t spinning_slots_ = 0;
  uint64_t next_slot_ = 1;
  TimerWheel wheel_;
  common::FileDescriptor epoll_;
  common::FileDescriptor timer_fd_;
  common::FileDescriptor wake_fd_;
  common::FileDescriptor raw4_;  // duplicates are re-sent through these (marked)
  common::FileDescriptor raw6_;
  std::thread thread_;
  std::atomic<bool> running_{false};
  std::atomic<uint64_t> wakeups_{0};
  int64_t armed_ns_ = -1;
  common::WakeupLateness lateness_;
  int64_t started_ns_ = 0;
  int64_t polled_ns_ = 0;
  int64_t last_housekeeping_ns_ = 0;
  int64_t last_packet_ns_ = 0;  // loop thread only: for busy polling
  // Polling budget: the loop may poll (spin window, busy poll) only while
  // it has been awake (working or polling, not blocked in epoll_wait) for
  // less than kBusyBudgetNs of the current kPollWindowNs; past it, it sleeps
  // until the deadline itself. Without a cap a SCHED_FIFO loop polling
  // through back-to-back spin windows (rate x spin >= 1) would hog its core,
  // starve the applications on it and be RT-throttled (measured: 35 ms
  // stalls). Decision: 70 % of each ms. Counting work as well as polls keeps
  // the total under the kernel's 95 % RT limit at any packet rate; 70 %
  // leaves a 10k pps flow with --spin-us 50 (half of every 100 us in spin
  // windows) its precision, which a 50 % cap did not.
  static constexpr int64_t kPollWindowNs = 1000000;
  static constexpr int64_t kBusyBudgetNs = 700000;
  int64_t poll_window_start_ns_ = 0;
  int64_t busy_ns_ = 0;  // awake time in the current window
};

}  // namespace nabla::injector
