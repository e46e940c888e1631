#pragma once
// The ground truth: a pointer chase (`nabla memlat --probe`). Each cache
// line of a buffer holds the address of the next line to read, in the order
// of one random cycle through all of them (seeded), so every load depends on
// the one before and no prefetcher can guess it; the time per load is the
// latency of whatever level of the hierarchy the buffer fits in. Optional
// load threads stream through buffers of their own meanwhile, for the
// loaded-latency curve.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace nabla::memlat {

struct CacheSizes {
  std::size_t l1d_bytes = 32 * 1024;
  std::size_t l2_bytes = 1024 * 1024;
  std::size_t llc_bytes = 32 * 1024 * 1024;
};

// From a sysfs cache directory (index*/level, type, size); the defaults
// above for what it does not say.
CacheSizes read_cache_sizes(const std::string& dir = "/sys/devices/system/cpu/cpu0/cache");

// Half of L1d, half of L2, and max(4 × LLC, 64 MiB): sizes that sit well
// inside L1, inside L2, and far outside the last-level cache.
std::vector<std::size_t> default_buffer_sizes(const CacheSizes& caches);

struct ProbePoint {
  std::size_t buffer_bytes = 0;
  double latency_ns = 0;
  int load_threads = 0;
  bool huge_pages = false;  // MADV_HUGEPAGE accepted for the buffer
};

struct ProbeOptions {
  std::uint64_t seed = 1;
  // Dependent loads timed per point, after as many (at most one pass over
  // the buffer) to warm up.
  std::size_t loads = 2'000'000;
};

// One point: builds the cycle, walks it to warm up, then times
// `loads` dependent loads while `load_threads` threads stream memory.
ProbePoint chase(std::size_t buffer_bytes, int load_threads, const ProbeOptions& options);

// The line visit order as chase() lays it out: a single cycle through
// `lines` elements (Sattolo's algorithm), next[i] = the line read after i.
std::vector<std::uint32_t> random_cycle(std::size_t lines, std::uint64_t seed);

}  // namespace nabla::memlat
