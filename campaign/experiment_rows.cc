// A run's stored experiments as JSON; see experiment_rows.hh.
#include "nabla/campaign/experiment_rows.hh"

#include "nabla/common/json_null.hh"
#include "nabla/db/reads.hh"

namespace nabla::campaign {
namespace {

using nlohmann::json;

using common::or_null;

json checks_json(const std::vector<db::ExperimentCheck>& checks) {
  json out = json::array();
  for (const db::ExperimentCheck& c : checks) {
    out.push_back({{"window", c.window},
                   {"term", c.term},
                   {"bound", c.bound},
                   {"value", c.value},
                   {"ci_low", or_null(c.ci_low)},
                   {"ci_high", or_null(c.ci_high)},
                   {"verdict", c.verdict},
                   {"extra_ns", or_null(c.extra_ns)},
                   {"note", or_null(c.note)},
                   {"samples", c.samples},
                   {"scheduled", c.scheduled}});
  }
  return out;
}

}  // namespace

json stored_experiments_json(db::Database& db, std::int64_t run_id) {
  json out = json::array();
  for (const db::ExperimentRow& row : db::run_experiments(db, run_id)) {
    const db::Experiment& e = row.experiment;
    out.push_back({{"name", e.name},
                   {"verdict", e.verdict},
                   {"links", json::parse(e.links_json, nullptr, false)},
                   {"spec", json::parse(e.spec_json, nullptr, false)},
                   {"fault_start_ns", e.fault_start_ns},
                   {"fault_end_ns", e.fault_end_ns},
                   {"mean_delay_ns", or_null(e.mean_delay_ns)},
                   {"observed_change_ns", or_null(e.observed_change_ns)},
                   {"observed_ci_low_ns", or_null(e.observed_ci_low_ns)},
                   {"observed_ci_high_ns", or_null(e.observed_ci_high_ns)},
                   {"predicted_change_ns", or_null(e.predicted_change_ns)},
                   {"predicted_ci_low_ns", or_null(e.predicted_ci_low_ns)},
                   {"predicted_ci_high_ns", or_null(e.predicted_ci_high_ns)},
                   {"checks", checks_json(row.checks)}});
  }
  return out;
}

}  // namespace nabla::campaign
