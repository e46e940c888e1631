// A thread blocks in poll() on a pipe; another writes to it after a chosen
// block length; the wake delay is the first thread's clock after poll()
// returns minus the writer's clock just before write(). Block lengths are
// interleaved in runs of 8, so drift in what else runs on the machine falls
// on every length alike. Per length it prints the delays' mean, p50, p90
// and p99, and the mean's excess over the shortest length's with its
// standard error: what a wait pays for having been long.
// With SLICE_US > 0 the blocked thread polls with that timeout, again and
// again, until the byte arrives (a wait made of short blocks).
//   usage: wake_bench SLICE_US ROUNDS LENGTH_US...   (ROUNDS x 8 waits a length)
#include <poll.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
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

// The writer's side of one wait: at `due`, stamp and write one byte.
struct Handoff {
  std::atomic<long long> due{0};
  std::atomic<long long> wrote{0};
  std::atomic<int> turn{0};  // odd: a wait armed; even: its byte written
};

void writer(Handoff& h, int fd, int waits) {
  for (int i = 0; i < waits; ++i) {
    while (h.turn.load() != 2 * i + 1) sleep_ns(20'000);
    const long long due = h.due.load();
    // Sleep to within 50 us of the due time, then spin, so the write is on
    // time whatever this thread's own wake-up costs.
    sleep_ns(due - now_ns() - 50'000);
    while (now_ns() < due) {
    }
    h.wrote.store(now_ns());
    const char byte = 1;
    if (write(fd, &byte, 1) != 1) std::abort();
    h.turn.store(2 * i + 2);
  }
}

struct Summary {
  double mean = 0, se = 0, p50 = 0, p90 = 0, p99 = 0;
};

Summary summarize(std::vector<double> v) {
  Summary s;
  std::sort(v.begin(), v.end());
  for (double x : v) s.mean += x;
  s.mean /= static_cast<double>(v.size());
  double ss = 0;
  for (double x : v) ss += (x - s.mean) * (x - s.mean);
  s.se = std::sqrt(ss / static_cast<double>(v.size() - 1) / static_cast<double>(v.size()));
  auto at = [&](double q) { return v[static_cast<size_t>(q * static_cast<double>(v.size() - 1))]; };
  s.p50 = at(0.50);
  s.p90 = at(0.90);
  s.p99 = at(0.99);
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: wake_bench SLICE_US ROUNDS LENGTH_US...\n");
    return 2;
  }
  const int slice_us = std::atoi(argv[1]);
  const int rounds = std::atoi(argv[2]);
  std::vector<long long> lengths_ns;
  for (int i = 3; i < argc; ++i) lengths_ns.push_back(std::atoll(argv[i]) * 1000);
  if (slice_us < 0 || slice_us > 100'000 || rounds < 1 || rounds > 10'000 ||
      std::any_of(lengths_ns.begin(), lengths_ns.end(),
                  [](long long l) { return l < 50'000 || l > 100'000'000; })) {
    std::fprintf(stderr,
                 "wake_bench: SLICE_US in [0, 100000], ROUNDS in [1, 10000], lengths in "
                 "[50, 100000] us\n");
    return 2;
  }
  int fds[2];
  if (pipe(fds) != 0) return 1;
  const int per_round = 8 * static_cast<int>(lengths_ns.size());
  const int waits = rounds * per_round;
  Handoff h;
  std::thread w(writer, std::ref(h), fds[1], waits);
  std::vector<std::vector<double>> delays_us(lengths_ns.size());
  for (int i = 0; i < waits; ++i) {
    const size_t which = static_cast<size_t>((i % per_round) / 8);
    h.due.store(now_ns() + lengths_ns[which]);
    h.turn.store(2 * i + 1);
    pollfd p{fds[0], POLLIN, 0};
    if (slice_us == 0) {
      poll(&p, 1, -1);
    } else {
      const timespec slice{0, slice_us * 1000L};
      while (ppoll(&p, 1, &slice, nullptr) == 0) {
      }
    }
    const long long woke = now_ns();
    char byte;
    if (read(fds[0], &byte, 1) != 1) return 1;
    while (h.turn.load() != 2 * i + 2) {
    }
    delays_us[which].push_back(static_cast<double>(woke - h.wrote.load()) / 1000.0);
    sleep_ns(300'000);  // the waiter runs a little between waits, as a tier does
  }
  w.join();
  const Summary base = summarize(delays_us[0]);
  std::printf("%10s %6s %9s %9s %9s %9s %22s\n", "block_us", "n", "mean_us", "p50_us", "p90_us",
              "p99_us", "mean - shortest (se)");
  for (size_t k = 0; k < lengths_ns.size(); ++k) {
    const Summary s = summarize(delays_us[k]);
    std::printf("%10lld %6zu %9.1f %9.1f %9.1f %9.1f %14.1f (%.1f)\n", lengths_ns[k] / 1000,
                delays_us[k].size(), s.mean, s.p50, s.p90, s.p99, s.mean - base.mean,
                std::sqrt(s.se * s.se + base.se * base.se));
  }
  return 0;
}
