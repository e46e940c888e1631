#include "nabla/memlat/probe.hh"

#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <fstream>
#include <random>
#include <stdexcept>
#include <thread>

namespace nabla::memlat {
namespace {

constexpr std::size_t kLine = 64;
constexpr std::size_t kHugePage = 2 * 1024 * 1024;

std::size_t parse_size(std::string text) {
  // "32K", "1024K", "32768K", "2M"
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  if (text.empty()) return 0;
  std::size_t multiplier = 1;
  if (text.back() == 'K') multiplier = 1024;
  if (text.back() == 'M') multiplier = 1024 * 1024;
  if (multiplier != 1) text.pop_back();
  try {
    return static_cast<std::size_t>(std::stoull(text)) * multiplier;
  } catch (const std::exception&) {
    return 0;
  }
}

std::string read_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

// An anonymous mapping aligned for huge pages, released on scope exit.
class Buffer {
 public:
  explicit Buffer(std::size_t bytes) : bytes_(round_up(bytes)) {
    void* p = ::mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::runtime_error("--probe: cannot map the buffer");
    data_ = static_cast<char*>(p);
    huge_ = ::madvise(data_, bytes_, MADV_HUGEPAGE) == 0;
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer() { ::munmap(data_, bytes_); }
  char* data() const { return data_; }
  std::size_t bytes() const { return bytes_; }
  bool huge() const { return huge_; }

 private:
  static std::size_t round_up(std::size_t b) {
    const std::size_t unit = b >= kHugePage ? kHugePage : kLine;
    return (b + unit - 1) / unit * unit;
  }
  std::size_t bytes_;
  char* data_ = nullptr;
  bool huge_ = false;
};

// Reads and writes its own buffer until told to stop: background bandwidth.
void stream(std::size_t bytes, const std::atomic<bool>& stop) {
  Buffer b(bytes);
  auto* words = reinterpret_cast<std::uint64_t*>(b.data());
  const std::size_t n = b.bytes() / sizeof(std::uint64_t);
  std::uint64_t x = 1;
  while (!stop.load(std::memory_order_relaxed)) {
    for (std::size_t i = 0; i < n; i += 8) words[i] += x;
    ++x;
  }
}

// Follows `loads` pointers from `start`; returns where it ended so the
// compiler keeps every load.
void* walk(void* start, std::size_t loads) {
  void* p = start;
  for (std::size_t i = 0; i < loads; ++i) p = *static_cast<void**>(p);
  return p;
}

}  // namespace

CacheSizes read_cache_sizes(const std::string& dir) {
  CacheSizes sizes;
  for (int i = 0; i < 8; ++i) {
    const std::string index = dir + "/index" + std::to_string(i);
    const std::string level = read_line(index + "/level");
    if (level.empty()) continue;
    const std::string type = read_line(index + "/type");
    const std::size_t size = parse_size(read_line(index + "/size"));
    if (size == 0 || type == "Instruction") continue;
    if (level == "1") sizes.l1d_bytes = size;
    if (level == "2") sizes.l2_bytes = size;
    if (level == "3" || level == "4") sizes.llc_bytes = std::max(sizes.llc_bytes, size);
  }
  return sizes;
}

std::vector<std::size_t> default_buffer_sizes(const CacheSizes& c) {
  return {c.l1d_bytes / 2, c.l2_bytes / 2,
          std::max<std::size_t>(4 * c.llc_bytes, 64 * 1024 * 1024)};
}

std::vector<std::uint32_t> random_cycle(std::size_t lines, std::uint64_t seed) {
  std::vector<std::uint32_t> order(lines);
  for (std::size_t i = 0; i < lines; ++i) order[i] = static_cast<std::uint32_t>(i);
  std::mt19937_64 rng(seed);
  // Sattolo: a uniformly random permutation that is one single cycle.
  for (std::size_t i = lines - 1; i > 0; --i) {
    std::uniform_int_distribution<std::size_t> pick(0, i - 1);
    std::swap(order[i], order[pick(rng)]);
  }
  return order;
}

ProbePoint chase(std::size_t buffer_bytes, int load_threads, const ProbeOptions& options) {
  const std::size_t lines = std::max<std::size_t>(buffer_bytes / kLine, 2);
  Buffer buffer(lines * kLine);
  const std::vector<std::uint32_t> next = random_cycle(lines, options.seed);
  for (std::size_t i = 0; i < lines; ++i) {
    void* target = buffer.data() + static_cast<std::size_t>(next[i]) * kLine;
    std::memcpy(buffer.data() + i * kLine, &target, sizeof target);
  }
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  const std::size_t stream_bytes = std::max<std::size_t>(buffer_bytes, 64 * 1024 * 1024);
  for (int t = 0; t < load_threads; ++t)
    threads.emplace_back(stream, stream_bytes, std::cref(stop));
  // Warm up (page tables, caches) for as many loads as will be timed.
  void* p = walk(buffer.data(), std::min(lines, options.loads));
  const std::size_t loads = options.loads;
  const auto start = std::chrono::steady_clock::now();
  p = walk(p, loads);
  const auto end = std::chrono::steady_clock::now();
  stop = true;
  for (auto& t : threads) t.join();
  static std::atomic<void*> sink;
  sink.store(p, std::memory_order_relaxed);
  const double ns = std::chrono::duration<double, std::nano>(end - start).count();
  return {buffer_bytes, ns / static_cast<double>(loads), load_threads, buffer.huge()};
}

}  // namespace nabla::memlat
