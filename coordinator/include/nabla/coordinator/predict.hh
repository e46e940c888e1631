#pragma once
// `nabla predict`: what-if response times from a run's link gradients
// (link-gradient paper, section 5.3; the math is analysis/prediction.hh).
//
// For every transaction type measured in the run:
//     predicted = baseline + sum over selected links of gradient(link, type) * dl
// baseline = mean response time of the run's training-phase samples of that
// type, with variance (std error of the mean)^2; each gradient's variance is
// its standard error^2, recovered from the stored CI as
//     se = max(value - ci_low, ci_high - value) / Phi^-1((1 + c) / 2)
// (the larger half-width, because the CI's low end may be clamped at 0).
//
// Selecting links (`--set SEL=DELTA`):
//   - SEL is a link label, either as stored in the database (links.label,
//     e.g. "tcp app/nabla-tier:0 -> db/nabla-tier:9003") or in the campaign
//     form `nabla run` prints and [truth] uses ("tcp app -> db:9003", see
//     campaign_link_label): that link only;
//   - otherwise SEL is "A->B" (spaces allowed around the arrow): EVERY link of
//     the run from host A to host B. Several links can match (a host talking
//     to two processes or ports of another, e.g. app->db to the db at :9003
//     and the audit log at :9004). The delay is applied to each of them: a
//     placement change moves the hosts, so every link between them gets the
//     extra latency, and their contributions add up.
//   A selector that matches no link is an error naming it and listing the
//   run's links. Two selectors hitting the same link add their deltas.
// DELTA is a signed duration ("+20ms", "35ms", "-500us"), optionally with
// the standard deviation of that latency change after '~' ("+20ms~2ms"),
// which enters the CI as rho(dl) in the paper's formula.
// A type without training samples, or without a gradient on a selected
// link, gets no prediction (its `missing` says why) instead of a wrong one.
//
// The gradient's range. A gradient holds for the delays it was measured at:
// with a sweep ([gradient] amplitudes) the link has a curve of (actual
// amplitude, gradient) points, else one point at its actual amplitude. The
// gradient for a change dl is read off the curve at |dl|
// (analysis/sweep.hh gradient_at: linear between the points, the nearest
// end outside them), and each term reports the measured range and the
// points used. A |dl| beyond 2x the largest measured amplitude gives a
// warning naming the link, the type and the range (`--strict`: an error, exit 1). A
// gradient stored without an amplitude has no range and no warning.
#include <cstdint>
#include <iosfwd>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "nabla/common/link_label.hh"

namespace CLI {
class App;
}
namespace nabla::db {
class Database;
}

namespace nabla::coordinator {

// The campaign label of a link (common/link_label.hh), the second form a
// selector may take.
using common::campaign_link_label;

struct LatencySet {
  std::string selector;  // label or "A->B"
  double delta_ns = 0;
  double delta_stddev_ns = 0;
};

// Parses "SEL=DELTA[~STDDEV]" (the last '=' splits); throws
// std::invalid_argument naming the text.
LatencySet parse_latency_set(std::string_view text);

// One point of a gradient curve a term was read from.
struct CurveUse {
  double amplitude_ns = 0;
  double gradient = 0;
};

struct PredictionTerm {
  std::string link;  // label
  double gradient = 0;
  double gradient_se = 0;
  double delta_ns = 0;
  double contribution_ns = 0;  // gradient * delta
  // The measured amplitudes [low, high] and the points the gradient was
  // read from; nullopt/empty for a gradient stored without an amplitude.
  std::optional<std::pair<double, double>> range_ns;
  std::vector<CurveUse> points;
  bool beyond_range = false;  // |delta| > 2x the largest measured amplitude
};

struct TypePrediction {
  std::string type;
  std::int64_t samples = 0;  // training samples behind the baseline
  double baseline_ns = 0;
  double baseline_se_ns = 0;
  std::vector<PredictionTerm> terms;
  std::optional<std::string> missing;  // why there is no prediction
  double predicted_ns = 0;
  double stddev_ns = 0;
  double ci_low_ns = 0;
  double ci_high_ns = 0;
};

struct PredictionReport {
  std::int64_t run_id = 0;
  double confidence = 0.95;
  struct Selection {
    std::string selector;
    double delta_ns = 0;
    double delta_stddev_ns = 0;
    std::vector<std::string> links;
  };
  std::vector<Selection> selections;
  std::vector<TypePrediction> types;  // sorted by name
  // One per link and type whose change lies beyond 2x its measured range.
  std::vector<std::string> warnings;
};

// Computes the prediction from an open database (read-only is enough).
// Throws std::runtime_error for an unknown run or a run without gradients,
// std::invalid_argument for a selector matching no link.
PredictionReport predict_run(db::Database& db, std::int64_t run_id,
                             const std::vector<LatencySet>& sets, double confidence = 0.95);

nlohmann::json to_json(const PredictionReport& report);
void print_prediction(const PredictionReport& report, std::ostream& out);

void register_predict_command(CLI::App& app);

}  // namespace nabla::coordinator
