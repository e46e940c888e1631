// Messages per transaction: the arithmetic; see nabla/campaign/messages.hh.
#include "nabla/campaign/messages.hh"

#include <algorithm>
#include <cmath>

#include "nabla/analysis/distributions.hh"
#include "nabla/analysis/least_squares.hh"
#include "nabla/campaign/math.hh"
#include "nabla/common/units.hh"

namespace nabla::campaign {
namespace {

// The per-interval observations: segments crossed and requests sent per type.
struct Intervals {
  std::vector<double> segments;
  std::vector<std::vector<double>> requests;  // [interval][type]
};

Intervals intervals_of(const std::vector<SegmentCount>& counts,
                       const std::vector<analysis::LatencyRecord>& records, std::size_t types,
                       std::int64_t start_ns, std::int64_t end_ns) {
  std::vector<SegmentCount> kept;
  for (const SegmentCount& c : counts) {
    if (c.t_ns >= start_ns && c.t_ns <= end_ns) kept.push_back(c);
  }
  std::sort(kept.begin(), kept.end(),
            [](const SegmentCount& a, const SegmentCount& b) { return a.t_ns < b.t_ns; });
  std::vector<std::int64_t> bounds;
  for (const SegmentCount& c : kept) bounds.push_back(c.t_ns);
  Intervals out;
  if (bounds.size() < 2) return out;
  std::vector<std::vector<double>> sent(bounds.size() - 1, std::vector<double>(types, 0.0));
  for (const analysis::LatencyRecord& r : records) {
    if (r.type < 0 || static_cast<std::size_t>(r.type) >= types) continue;
    const auto it = std::upper_bound(bounds.begin(), bounds.end(), r.t_ns);
    if (it == bounds.begin() || it == bounds.end()) continue;  // outside [first, last)
    sent[static_cast<std::size_t>(it - bounds.begin()) - 1][static_cast<std::size_t>(r.type)] += 1;
  }
  for (std::size_t j = 1; j < kept.size(); ++j) {
    // A count that went back (the sniffer dropped and re-created a record)
    // says nothing about that interval.
    if (kept[j].segments < kept[j - 1].segments) continue;
    out.segments.push_back(static_cast<double>(kept[j].segments - kept[j - 1].segments));
    out.requests.push_back(sent[j - 1]);
  }
  return out;
}

MessagesPerTxn with_interval(double value, double se, double df, double confidence) {
  const double t = analysis::student_t_quantile((1.0 + confidence) / 2.0, df);
  return {value, se, value - t * se, value + t * se};
}

// One type: sum(segments) / sum(requests); the ratio estimator's se.
std::optional<MessagesPerTxn> ratio_estimate(const std::vector<double>& segments,
                                             const std::vector<double>& requests,
                                             double confidence) {
  const std::size_t n = segments.size();
  double sum_s = 0, sum_r = 0;
  for (std::size_t j = 0; j < n; ++j) {
    sum_s += segments[j];
    sum_r += requests[j];
  }
  if (n < 2 || sum_r <= 0) return std::nullopt;
  const double value = sum_s / sum_r;
  double rss = 0;
  for (std::size_t j = 0; j < n; ++j) {
    const double e = segments[j] - value * requests[j];
    rss += e * e;
  }
  const double nd = static_cast<double>(n);
  const double se = std::sqrt(rss * nd / (nd - 1.0)) / sum_r;
  return with_interval(value, se, nd - 1.0, confidence);
}

// The least-squares fit without intercept on the request counts of the
// types `used`; none when they are inseparable.
std::optional<analysis::LeastSquaresFit> fit_types(const Intervals& in,
                                                   const std::vector<std::size_t>& used) {
  std::vector<std::vector<double>> columns(used.size());
  for (std::size_t a = 0; a < used.size(); ++a) {
    for (const auto& r : in.requests) columns[a].push_back(r[used[a]]);
  }
  return analysis::least_squares(columns, in.segments);
}

// Several types: least squares without intercept, kept in the physical
// range. A message count is never negative, so a type whose coefficient
// comes out below zero is held at 0 and the others are fitted again
// (the most negative first, until none is); its interval is [0, the upper
// end of the unconstrained fit's]. The standard errors come from the
// residuals of the final fit, over n - p degrees of freedom of the full
// model (the held types were still estimated).
std::vector<std::optional<MessagesPerTxn>> least_squares_estimate(
    const Intervals& in, const std::vector<std::size_t>& used, std::size_t types,
    double confidence) {
  std::vector<std::optional<MessagesPerTxn>> out(types);
  const std::size_t n = in.segments.size(), p = used.size();
  if (n < p + 1) return out;
  const double df = static_cast<double>(n - p);
  const auto full = fit_types(in, used);
  if (!full) return out;
  std::vector<std::size_t> free = used;
  analysis::LeastSquaresFit fit = *full;
  while (true) {
    const auto lowest = std::min_element(fit.beta.begin(), fit.beta.end());
    if (*lowest >= 0 || free.size() == 1) break;
    free.erase(free.begin() + (lowest - fit.beta.begin()));
    auto refit = fit_types(in, free);
    if (!refit) return out;
    fit = std::move(*refit);
  }
  const double sigma2 = fit.rss / df;
  for (std::size_t a = 0; a < free.size(); ++a) {
    const double value = std::max(0.0, fit.beta[a]);
    const double se = std::sqrt(std::max(0.0, sigma2 * fit.xtx_inverse[a][a]));
    MessagesPerTxn m = with_interval(value, se, df, confidence);
    m.ci_low = std::max(0.0, m.ci_low);
    out[free[a]] = m;
  }
  const double full_sigma2 = full->rss / df;
  for (std::size_t a = 0; a < p; ++a) {
    if (out[used[a]]) continue;
    const double se = std::sqrt(std::max(0.0, full_sigma2 * full->xtx_inverse[a][a]));
    const MessagesPerTxn unconstrained = with_interval(full->beta[a], se, df, confidence);
    out[used[a]] = MessagesPerTxn{0.0, se, 0.0, std::max(0.0, unconstrained.ci_high)};
  }
  return out;
}

}  // namespace

std::vector<std::optional<MessagesPerTxn>> messages_per_transaction(
    const std::vector<SegmentCount>& counts, const std::vector<analysis::LatencyRecord>& records,
    std::size_t types, std::int64_t start_ns, std::int64_t end_ns, double confidence) {
  const Intervals in = intervals_of(counts, records, types, start_ns, end_ns);
  std::vector<std::size_t> used;  // the types with a request in the window
  for (std::size_t t = 0; t < types; ++t) {
    double sent = 0;
    for (const auto& r : in.requests) sent += r[t];
    if (sent > 0) used.push_back(t);
  }
  if (used.size() != 1) return least_squares_estimate(in, used, types, confidence);
  std::vector<std::optional<MessagesPerTxn>> out(types);
  std::vector<double> requests;
  for (const auto& r : in.requests) requests.push_back(r[used.front()]);
  out[used.front()] = ratio_estimate(in.segments, requests, confidence);
  return out;
}

std::optional<MessagesPerTxn> combine_messages(
    const std::vector<std::optional<MessagesPerTxn>>& phases) {
  std::vector<double> values, errors;
  double widest_t = 0;
  for (const auto& m : phases) {
    if (!m) continue;
    values.push_back(m->value);
    errors.push_back(m->standard_error);
    if (m->standard_error > 0) {
      widest_t = std::max(widest_t, (m->ci_high - m->value) / m->standard_error);
    }
  }
  if (values.empty()) return std::nullopt;
  if (values.size() == 1) {
    for (const auto& m : phases) {
      if (m) return m;
    }
  }
  const auto mean = inverse_variance_mean(values, errors);
  double weight = 0;
  for (double e : errors) weight += inverse_variance_weight(e);
  if (!mean || weight <= 0) {
    // Every phase exact (no residual): their plain mean, no spread.
    double sum = 0;
    for (double v : values) sum += v;
    const double v = sum / static_cast<double>(values.size());
    return MessagesPerTxn{v, 0, v, v};
  }
  const double se = 1.0 / std::sqrt(weight);
  // A count is never negative: neither are the combined value and interval.
  const double value = std::max(0.0, *mean);
  return MessagesPerTxn{value, se, std::max(0.0, *mean - widest_t * se), *mean + widest_t * se};
}

bool waits_not_hops(double gradient, double gradient_ci_low, double gradient_ci_high,
                    const MessagesPerTxn& messages) {
  const double half_width = (gradient_ci_high - gradient_ci_low) / 2.0;
  const bool apart = std::abs(gradient - messages.value) > half_width;
  const bool outside = gradient < messages.ci_low || gradient > messages.ci_high;
  return apart && outside;
}

std::string messages_cell(double gradient, double gradient_ci_low, double gradient_ci_high,
                          const std::optional<MessagesPerTxn>& messages) {
  if (!messages) return "-";
  const MessagesPerTxn& m = *messages;
  std::string text = common::format_number(m.value, 3) + " [" + common::format_number(m.ci_low, 3) +
                     ", " + common::format_number(m.ci_high, 3) + "]";
  if (waits_not_hops(gradient, gradient_ci_low, gradient_ci_high, m)) text += " !";
  return text;
}

}  // namespace nabla::campaign
