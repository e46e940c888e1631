#pragma once
// A run's measured gradients beside a truth: the acceptance rule of
// `nabla demo` and of the verdicts `nabla report` leads with.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace nabla::db {
class Database;
}

namespace nabla::campaign {

// Per campaign link label ("tcp web -> app:9002"), per transaction type, the
// true gradient (a campaign file's [truth]).
using TruthTable = std::map<std::string, std::map<std::string, double>>;

// Acceptance of one measured gradient: |value - truth| <= 10% of
// max(|truth|, 1) (an absolute 0.1 for zero truths), the CI contains the
// truth, and the throughput did not change by 5% or more during the link's
// measurement.
// Throughput is judged per link over all types (the rate of completed
// requests in the link's active phase against the training phase), not per
// type: in open loop the send schedule ignores the injection, so a change
// means lost or timed-out requests, and the per-type rate of a few hundred
// requests carries several percent of Poisson noise alone. It FAILs when the
// change exceeds 5% by more than two standard errors of that counting noise
// (se = sqrt(1/n_active + 1/n_training)), i.e. when the data show a change
// of more than 5%.
struct GradientCheck {
  std::string link;  // campaign label
  std::string type;
  std::optional<double> truth;  // none: a link the service model does not know
  std::optional<double> value, ci_low, ci_high;
  std::optional<double> throughput_change;       // stored per (link, type), shown only
  std::optional<double> link_throughput_change;  // judged
  double link_throughput_se = 0;
  bool pass = false;
  std::string why;  // what failed, empty on PASS
};
GradientCheck check_gradient(std::string link, std::string type, std::optional<double> truth,
                             std::optional<double> value, std::optional<double> ci_low,
                             std::optional<double> ci_high,
                             std::optional<double> link_throughput_change,
                             double link_throughput_se = 0);

// Every gradient of the run beside the truth, plus a FAIL row for each
// (link, type) of the truth the run did not measure. Sorted by link, type.
std::vector<GradientCheck> check_run_gradients(db::Database& db, std::int64_t run_id,
                                               const TruthTable& truth);

}  // namespace nabla::campaign
