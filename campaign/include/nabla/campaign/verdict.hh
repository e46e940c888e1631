#pragma once
// The arithmetic of a fault experiment's verdict (docs/method.md, "Fault
// experiments"): pure functions of the samples of one window, tested with
// literal inputs.
//
//  - experiment_window: over the window's response times in send order, the
//    stride of `nabla load`'s self-correcting method (the first 1:s thinning
//    with no lag-1 Spearman autocorrelation, loadgen/controller_checks.hh),
//    the ADF stationarity check on the kept series, the percentiles with
//    their order-statistic CIs on the kept series, the mean with its normal
//    CI (kept series), the failure share (scheduled sends not answered) with
//    its Wilson interval.
//  - check_window: each SLO term against its bound. pass: the CI lies
//    entirely inside the bound; fail: entirely outside; inconclusive: it
//    straddles the bound, or there is no CI (too few samples, not iid).
//  - extra_duration_ns: for an inconclusive term, how much longer at the same
//    rate would decide it. A CI's half-width shrinks as 1/sqrt(n), so the
//    half-width h on the bound's side must fall to |value - bound|: the
//    window needs (h / |value - bound|)^2 times its length. None when the
//    estimate equals the bound (no length decides it).
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "nabla/campaign/spec.hh"

namespace nabla::campaign {

enum class Verdict { kPass, kFail, kInconclusive };
std::string_view to_string(Verdict verdict);
// "pass" | "fail" | "inconclusive"; throws std::invalid_argument otherwise.
Verdict parse_verdict(std::string_view text);

struct Interval {
  double low = 0;
  double high = 0;
};

struct WindowPercentile {
  std::string term;  // "p99"
  double p = 0;      // 0.99
  double value_ns = 0;
  std::optional<Interval> ci_ns;  // none: too few kept samples
};

struct ExperimentWindow {
  std::int64_t duration_ns = 0;
  std::size_t scheduled = 0;          // sends whose intended time fell in the window
  std::size_t completed = 0;          // of them, answered without an error (the samples)
  std::optional<std::size_t> stride;  // none: not iid at the lowest sampling rate tried
  // No stride, but only because too few samples were left to test the next
  // one: a longer window could still find it. The last stride tested (0: none).
  bool too_few_for_iid = false;
  std::size_t last_stride_tried = 0;
  std::size_t kept = 0;               // samples at the stride (the CIs' n)
  bool stationary = false;
  std::vector<WindowPercentile> percentiles;  // in the order asked
  double mean_ns = 0;
  std::optional<Interval> mean_ci_ns;
  double error_rate = 0;  // 1 - completed / scheduled (0 without sends)
  Interval error_ci;      // Wilson
};

// `latencies_ns` in send order; `bounds` says which percentiles to estimate.
ExperimentWindow experiment_window(std::span<const double> latencies_ns, std::size_t scheduled,
                                   std::int64_t duration_ns,
                                   const std::vector<PercentileBound>& bounds, double confidence);

struct TermCheck {
  std::string window;        // baseline | fault | recovery
  std::string term;          // p99 | errors | throughput
  double bound = 0;          // ns, a share, or a relative change
  bool bound_is_max = true;  // false: throughput (a floor)
  double value = 0;
  std::optional<Interval> ci;
  Verdict verdict = Verdict::kInconclusive;
  std::optional<std::int64_t> extra_ns;  // inconclusive and decidable
  std::string note;                      // why inconclusive, when it cannot say how long
};

Verdict judge(const Interval& ci, double bound, bool bound_is_max);
std::optional<std::int64_t> extra_duration_ns(double value, const Interval& ci, double bound,
                                              std::int64_t window_ns);

// The throughput at the offered rate (completed / scheduled) relative to the
// baseline window's, minus 1, with a delta-method CI on the log ratio.
TermCheck throughput_check(const ExperimentWindow& window, const ExperimentWindow& baseline,
                           double floor, double confidence);

// Every term of the SLO over one window (throughput against `baseline`;
// none for the baseline window itself).
std::vector<TermCheck> check_window(const std::string& name, const ExperimentWindow& window,
                                    const ExperimentWindow& baseline, const SloSpec& slo,
                                    double confidence);

// fail if any fails, else inconclusive if any is, else pass.
Verdict overall_verdict(std::span<const TermCheck> checks);

}  // namespace nabla::campaign
