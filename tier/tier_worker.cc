// nabla-tier request execution: workers draw service times, spin or sleep,
// make downstream calls in their pattern and build responses. The async
// sender runs fire-and-forget calls. See tier_server.hh.
#include <sys/eventfd.h>
#include <time.h>

#include <chrono>
#include <thread>

#include "nabla/common/clock.hh"
#include "nabla/tier/tier_server.hh"

namespace nabla::tier {
namespace {

using common::monotonic_ns;

// Async calls waiting beyond this are dropped (and counted): a fire-and-forget
// call must never make the tier's memory grow without bound.
constexpr size_t kMaxAsyncQueue = 4096;

void burn_until(int64_t deadline_ns, ServiceMode mode) {
  if (mode == ServiceMode::kSleep) {
    timespec ts{};
    ts.tv_sec = deadline_ns / 1'000'000'000;
    ts.tv_nsec = deadline_ns % 1'000'000'000;
    while (::clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) == EINTR) {
    }
    return;
  }
  while (monotonic_ns() < deadline_ns) {
  }
}

std::string make_response(int status, const char* reason, bool keep_alive, int64_t body_bytes,
                          int64_t service_ns, int64_t queue_ns, int64_t downstream_ns) {
  std::string r;
  r.reserve(200 + static_cast<size_t>(body_bytes));
  r.append("HTTP/1.1 ").append(std::to_string(status)).append(" ").append(reason);
  r.append("\r\nContent-Type: application/octet-stream\r\nContent-Length: ");
  r.append(std::to_string(body_bytes));
  r.append(keep_alive ? "\r\nConnection: keep-alive" : "\r\nConnection: close");
  r.append("\r\nX-Service-Time-Ns: ").append(std::to_string(service_ns));
  r.append("\r\nX-Queue-Ns: ").append(std::to_string(queue_ns));
  r.append("\r\nX-Downstream-Ns: ").append(std::to_string(downstream_ns));
  r.append("\r\n\r\n");
  r.append(static_cast<size_t>(body_bytes), 'x');
  return r;
}

}  // namespace

void TierServer::worker_loop(int index) {
  std::mt19937_64 rng(config_.seed + static_cast<uint64_t>(index));
  while (true) {
    Job job;
    {
      std::unique_lock lock(jobs_mu_);
      jobs_cv_.wait(lock, [this] { return stopping_.load() || !jobs_.empty(); });
      if (stopping_.load()) return;
      job = std::move(jobs_.front());
      jobs_.pop_front();
    }
    std::string response = handle(job, rng);
    requests_.fetch_add(1, std::memory_order_relaxed);
    const auto split = static_cast<size_t>(config_.split_response_bytes);
    if (split > 0 && response.size() > split) {
      post(Done{job.conn_id, response.substr(0, split), false, true});
      std::this_thread::sleep_for(std::chrono::nanoseconds(config_.split_pause_ns));
      response.erase(0, split);
    }
    post(Done{job.conn_id, std::move(response), !job.keep_alive});
  }
}

void TierServer::post(Done done) {
  {
    std::lock_guard lock(done_mu_);
    done_.push_back(std::move(done));
  }
  const uint64_t one = 1;
  [[maybe_unused]] const ssize_t w = ::write(wake_fd_.get(), &one, sizeof one);
}

std::string TierServer::handle(const Job& job, std::mt19937_64& rng) {
  const int64_t picked_ns = monotonic_ns();
  const int64_t queue_ns = picked_ns - job.read_done_ns;
  if (job.spec == nullptr) {
    not_found_.fetch_add(1, std::memory_order_relaxed);
    return make_response(404, "Not Found", job.keep_alive, 0, monotonic_ns() - picked_ns, queue_ns,
                         0);
  }
  const UrlSpec& spec = *job.spec;
  burn_until(picked_ns + spec.service.draw_ns(rng), spec.mode);

  int64_t downstream_ns = 0;
  bool ok = true;
  for (const DownstreamCall& call : spec.calls) {
    if (call.pattern == CallPattern::kNone) continue;
    DownstreamPool& pool = *pools_.at(call.tier);
    const std::string& path = call.path.empty() ? job.path : call.path;
    if (call.pattern == CallPattern::kAsync) {
      std::lock_guard lock(async_mu_);
      if (async_.size() >= kMaxAsyncQueue) {
        async_dropped_.fetch_add(1, std::memory_order_relaxed);
      } else {
        async_.push_back(AsyncCall{&pool, path});
        async_cv_.notify_one();
      }
      continue;
    }
    const int64_t t0 = monotonic_ns();
    if (call.pattern == CallPattern::kSerial) {
      for (int k = 0; k < call.count; ++k) ok = pool.call_concurrent(path, 1) == 1 && ok;
    } else {
      ok = pool.call_concurrent(path, call.count) == call.count && ok;
    }
    downstream_ns += monotonic_ns() - t0;
  }
  if (!ok) downstream_failures_.fetch_add(1, std::memory_order_relaxed);
  // Service time as tailbench defines it: the worker's own time on the
  // request, without the wait for a worker (X-Queue-Ns) and without the
  // synchronous downstream calls (X-Downstream-Ns).
  const int64_t service_ns = monotonic_ns() - picked_ns - downstream_ns;
  return ok ? make_response(200, "OK", job.keep_alive, spec.response_bytes, service_ns, queue_ns,
                            downstream_ns)
            : make_response(502, "Bad Gateway", job.keep_alive, 0, service_ns, queue_ns,
                            downstream_ns);
}

void TierServer::async_loop() {
  while (true) {
    AsyncCall call;
    {
      std::unique_lock lock(async_mu_);
      async_cv_.wait(lock, [this] { return stopping_.load() || !async_.empty(); });
      if (stopping_.load()) return;
      call = std::move(async_.front());
      async_.pop_front();
    }
    call.pool->call_concurrent(call.path, 1);
  }
}

}  // namespace nabla::tier
