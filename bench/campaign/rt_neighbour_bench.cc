// Does a real-time thread that wakes often make the fair-class threads
// beside it wake sooner? A pair of ordinary threads hands a byte back and
// forth through two pipes, each side sleeping THINK_US before it answers
// (a tier waiting on its downstream); every hand-off's delay is the
// receiver's clock after poll() returns minus the sender's just before
// write(). A third thread, SCHED_FIFO, wakes every RT_PERIOD_US in the "on"
// windows (nanosleep, as the injector's sleeping releases do) and sleeps
// through the "off" windows. Windows of WINDOW_MS alternate, on and off, so
// drift in the rest of the machine falls on both alike. Prints the mean
// hand-off delay per kind of window, the difference on − off with its
// standard error over the window pairs, and the p50 and p90 of each.
// Needs root (SCHED_FIFO). Meant to run beside a build (bench/beside_build.bash).
//   usage: rt_neighbour_bench WINDOW_PAIRS WINDOW_MS RT_PERIOD_US THINK_US
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

namespace {

long long now_ns() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1'000'000'000LL + t.tv_nsec;
}

void sleep_ns(long long ns) {
  if (ns <= 0) return;
  timespec t{ns / 1'000'000'000LL, ns % 1'000'000'000LL};
  nanosleep(&t, nullptr);
}

std::atomic<bool> g_rt_on{false};
std::atomic<bool> g_stop{false};

void rt_neighbour(long long period_ns) {
  sched_param p{};
  p.sched_priority = 10;
  if (pthread_setschedparam(pthread_self(), SCHED_FIFO, &p) != 0) {
    std::fprintf(stderr, "rt_neighbour_bench: SCHED_FIFO refused (needs root)\n");
    std::exit(1);
  }
  while (!g_stop.load()) {
    sleep_ns(g_rt_on.load() ? period_ns : 20'000'000);
  }
}

struct Pipe {
  int fd[2];
};

// One side of the ping-pong: wait for a byte on `in` (stamped by the other
// side in `sent`), record the delay, think, stamp and answer on `out`.
void side(Pipe& in, Pipe& out, std::atomic<long long>& their_sent, std::atomic<long long>& my_sent,
          long long think_ns, std::vector<std::pair<long long, long long>>* delays, bool starts) {
  if (starts) {
    my_sent.store(now_ns());
    const char b = 1;
    if (write(out.fd[1], &b, 1) != 1) std::abort();
  }
  while (!g_stop.load()) {
    pollfd pfd{in.fd[0], POLLIN, 0};
    if (poll(&pfd, 1, 100) <= 0) continue;
    const long long got = now_ns();
    char b = 0;
    if (read(in.fd[0], &b, 1) != 1) std::abort();
    if (delays) delays->push_back({got, got - their_sent.load()});
    sleep_ns(think_ns);
    my_sent.store(now_ns());
    if (write(out.fd[1], &b, 1) != 1) std::abort();
  }
}

double mean(const std::vector<long long>& v) {
  double s = 0;
  for (long long x : v) s += static_cast<double>(x);
  return v.empty() ? 0 : s / static_cast<double>(v.size());
}

long long quantile(std::vector<long long> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[static_cast<size_t>(q * static_cast<double>(v.size() - 1))];
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr,
                 "usage: rt_neighbour_bench WINDOW_PAIRS WINDOW_MS RT_PERIOD_US THINK_US\n");
    return 2;
  }
  const int pairs = std::atoi(argv[1]);
  const long long window_ns = std::atoll(argv[2]) * 1'000'000LL;
  const long long period_ns = std::atoll(argv[3]) * 1'000LL;
  const long long think_ns = std::atoll(argv[4]) * 1'000LL;
  if (pairs < 2 || window_ns <= 0 || period_ns <= 0 || think_ns < 0) {
    std::fprintf(stderr, "rt_neighbour_bench: arguments must be positive (WINDOW_PAIRS >= 2)\n");
    return 2;
  }
  Pipe ab{}, ba{};
  if (pipe(ab.fd) != 0 || pipe(ba.fd) != 0) return 1;
  std::atomic<long long> a_sent{0}, b_sent{0};
  std::vector<std::pair<long long, long long>> a_delays, b_delays;
  a_delays.reserve(1 << 22);
  b_delays.reserve(1 << 22);
  std::thread rt(rt_neighbour, period_ns);
  std::thread b(side, std::ref(ab), std::ref(ba), std::ref(a_sent), std::ref(b_sent), think_ns,
                &b_delays, false);
  std::thread a(side, std::ref(ba), std::ref(ab), std::ref(b_sent), std::ref(a_sent), think_ns,
                &a_delays, true);
  // Window edges: even windows off, odd windows on.
  std::vector<long long> edges;
  const long long t0 = now_ns() + 200'000'000LL;  // settle
  for (int w = 0; w <= 2 * pairs; ++w) edges.push_back(t0 + w * window_ns);
  for (int w = 0; w < 2 * pairs; ++w) {
    sleep_ns(edges[w] - now_ns());
    g_rt_on.store(w % 2 == 1);
  }
  sleep_ns(edges.back() - now_ns());
  g_stop.store(true);
  a.join();
  b.join();
  rt.join();

  // Per window the hand-offs received inside it (the first 10% of each
  // window left out: the neighbour's state has just changed).
  std::vector<std::vector<long long>> by_window(2 * pairs);
  for (auto* v : {&a_delays, &b_delays}) {
    for (const auto& [at, d] : *v) {
      const auto it = std::upper_bound(edges.begin(), edges.end(), at);
      if (it == edges.begin() || it == edges.end()) continue;
      const size_t w = static_cast<size_t>(it - edges.begin() - 1);
      if (at - edges[w] < window_ns / 10) continue;
      by_window[w].push_back(d);
    }
  }
  std::vector<long long> off, on;
  std::vector<double> diffs;
  for (int p = 0; p < pairs; ++p) {
    const auto& o = by_window[2 * p];
    const auto& n = by_window[2 * p + 1];
    if (o.empty() || n.empty()) continue;
    diffs.push_back(mean(n) - mean(o));
    off.insert(off.end(), o.begin(), o.end());
    on.insert(on.end(), n.begin(), n.end());
  }
  if (diffs.size() < 2) {
    std::fprintf(stderr, "rt_neighbour_bench: fewer than 2 window pairs had hand-offs\n");
    return 1;
  }
  double md = 0, sd = 0;
  for (double d : diffs) md += d;
  md /= static_cast<double>(diffs.size());
  for (double d : diffs) sd += (d - md) * (d - md);
  sd = std::sqrt(sd / static_cast<double>(diffs.size() - 1));
  const double se = sd / std::sqrt(static_cast<double>(diffs.size()));
  std::printf(
      "hand-offs: off %zu, on %zu (neighbour SCHED_FIFO 10 waking every %lld us, think %lld us)\n",
      off.size(), on.size(), period_ns / 1000, think_ns / 1000);
  std::printf("off: mean %.1f us, p50 %.1f, p90 %.1f\n", mean(off) / 1e3, quantile(off, 0.5) / 1e3,
              quantile(off, 0.9) / 1e3);
  std::printf("on:  mean %.1f us, p50 %.1f, p90 %.1f\n", mean(on) / 1e3, quantile(on, 0.5) / 1e3,
              quantile(on, 0.9) / 1e3);
  std::printf("on - off, mean over %zu window pairs: %+.1f us (se %.1f)\n", diffs.size(), md / 1e3,
              se / 1e3);
  return 0;
}
