#pragma once
// Messages per transaction that cross a link (docs/method.md, "Messages per
// transaction"): the sniffer's data-segment count of the link's direction,
// read at the sniffer's scans during a measuring window, set against the
// requests sent between those scans.
//
// The arithmetic is pure, so it is tested with literal counts:
//  - one type: the ratio of the segments to the requests over the window,
//    with the ratio estimator's standard error from the per-interval
//    residuals;
//  - several types: least squares of the per-interval segment counts on the
//    per-interval request counts per type (no intercept), standard errors
//    from the residuals.
// The interval is value ± t_(J-p)((1+c)/2)·se over J intervals and p types.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "nabla/analysis/binning.hh"

namespace nabla::campaign {

// The link's cumulative segment count as of `t_ns` on the campaign's clock.
struct SegmentCount {
  std::int64_t t_ns = 0;
  std::uint64_t segments = 0;
};

struct MessagesPerTxn {
  double value = 0;
  double standard_error = 0;
  double ci_low = 0;
  double ci_high = 0;
};

// Per type (0 .. types-1), the messages per transaction over the intervals
// between consecutive counts whose times lie in [start_ns, end_ns]; a
// request belongs to the interval its send time falls in. nullopt for every
// type when there are too few intervals (one type: 2; p types: p + 1) or no
// request; for a type with no request in the window; and for every type
// when the request counts leave the types inseparable (a singular system).
std::vector<std::optional<MessagesPerTxn>> messages_per_transaction(
    const std::vector<SegmentCount>& counts, const std::vector<analysis::LatencyRecord>& records,
    std::size_t types, std::int64_t start_ns, std::int64_t end_ns, double confidence);

// Combines one type's estimates from several phases by inverse variance
// (math.hh inverse_variance_mean); the interval takes the widest t factor
// among the phases. nullopt when no phase has an estimate.
std::optional<MessagesPerTxn> combine_messages(
    const std::vector<std::optional<MessagesPerTxn>>& phases);

// Whether a gradient and the messages per transaction tell different
// stories: they differ by more than the gradient's CI half-width and the
// gradient lies outside the messages' CI. Then what moves with the link's
// latency is waiting (timeouts, queues, pacing), not the messages that
// cross it. Shown as "waits, not hops".
bool waits_not_hops(double gradient, double gradient_ci_low, double gradient_ci_high,
                    const MessagesPerTxn& messages);

// The tables' cell: "VALUE [LOW, HIGH]", a trailing " !" when waits_not_hops,
// "-" without an estimate.
std::string messages_cell(double gradient, double gradient_ci_low, double gradient_ci_high,
                          const std::optional<MessagesPerTxn>& messages);
// The line printed under a table with a flagged cell.
inline constexpr const char* kWaitsNotHopsLegend =
    "! waits, not hops: the gradient differs from the messages per transaction by more than "
    "either interval allows; what moves with the link's latency is waiting, not messages "
    "crossing it";

}  // namespace nabla::campaign
