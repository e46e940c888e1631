#include "nabla/analysis/fft.hh"

#include <fftw3.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <mutex>
#include <new>

namespace nabla::analysis {
namespace {

// Owner of one fftw_malloc'd array; frees it with fftw_free.
template <typename T>
class FftwArray {
 public:
  explicit FftwArray(std::size_t n) : data_(static_cast<T*>(fftw_malloc(sizeof(T) * n))) {
    if (data_ == nullptr) throw std::bad_alloc();
  }
  ~FftwArray() { fftw_free(data_); }
  FftwArray(const FftwArray&) = delete;
  FftwArray& operator=(const FftwArray&) = delete;

  T* get() const { return data_; }

 private:
  T* data_;
};

// Process-wide cache of r2c plans, one per size. Plans are destroyed when the
// cache is (at exit).
class PlanCache {
 public:
  ~PlanCache() {
    std::lock_guard lock(mutex_);
    for (auto& [n, plan] : plans_) fftw_destroy_plan(plan);
  }

  fftw_plan plan_for(std::size_t n) {
    std::lock_guard lock(mutex_);
    if (auto it = plans_.find(n); it != plans_.end()) return it->second;
    // FFTW_ESTIMATE never touches the arrays, so scratch arrays suffice; they
    // come from fftw_malloc so later per-call arrays have the same alignment.
    FftwArray<double> in(n);
    FftwArray<fftw_complex> out(n / 2 + 1);
    fftw_plan plan = fftw_plan_dft_r2c_1d(static_cast<int>(n), in.get(), out.get(), FFTW_ESTIMATE);
    if (plan == nullptr) throw std::bad_alloc();
    plans_.emplace(n, plan);
    return plan;
  }

  std::size_t size() {
    std::lock_guard lock(mutex_);
    return plans_.size();
  }

 private:
  std::mutex mutex_;
  std::map<std::size_t, fftw_plan> plans_;
};

PlanCache& plan_cache() {
  static PlanCache cache;
  return cache;
}

}  // namespace

std::vector<std::complex<double>> rfft(std::span<const double> x) {
  const std::size_t n = x.size();
  if (n == 0) return {};
  const std::size_t bins = n / 2 + 1;
  fftw_plan plan = plan_cache().plan_for(n);
  FftwArray<double> in(n);
  FftwArray<fftw_complex> out(bins);
  std::copy(x.begin(), x.end(), in.get());
  fftw_execute_dft_r2c(plan, in.get(), out.get());
  std::vector<std::complex<double>> result(bins);
  for (std::size_t k = 0; k < bins; ++k) result[k] = {out.get()[k][0], out.get()[k][1]};
  return result;
}

std::vector<double> magnitude_spectrum(std::span<const double> x) {
  const auto spectrum = rfft(x);
  std::vector<double> magnitude(spectrum.size());
  std::transform(spectrum.begin(), spectrum.end(), magnitude.begin(),
                 [](std::complex<double> c) { return std::abs(c); });
  return magnitude;
}

std::size_t fft_cached_plan_count() {
  return plan_cache().size();
}

}  // namespace nabla::analysis
