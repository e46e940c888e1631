#include "accel_history.hh"

#include "nabla/common/clock.hh"
#include "nabla/coordinator/history_db.hh"
#include "nabla/db/store.hh"

namespace nabla::coordinator {

db::AccelResult accel_result_row(std::optional<std::string> kernel, accel::Strategy strategy,
                                 accel::Design design, const accel::Params& params,
                                 const std::optional<accel::Kernel>& cost,
                                 const accel::Estimate& estimate,
                                 std::optional<double> min_bytes_speedup,
                                 std::optional<double> min_bytes_latency) {
  db::AccelResult r;
  r.kernel = std::move(kernel);
  r.strategy = accel::strategy_name(strategy);
  r.design = accel::design_name(design);
  r.cycles = params.cycles_per_s;
  r.alpha = params.alpha;
  r.accel_factor = params.accel_factor;
  r.offloads_per_s = params.offloads_per_s;
  r.o0 = params.setup_cycles;
  r.l_cycles = params.transfer_cycles;
  r.q_cycles = params.queue_cycles;
  r.o1 = params.switch_cycles;
  if (cost) {
    r.cycles_per_byte = cost->cycles_per_byte;
    r.beta = cost->beta;
    r.min_bytes_speedup = min_bytes_speedup;
    r.min_bytes_latency = min_bytes_latency;
  }
  r.speedup = estimate.speedup;
  r.latency_reduction = estimate.latency_reduction;
  return r;
}

namespace {

db::AccelProjection projection_row(std::int64_t run_id, const StoredProjection& p,
                                   const TypePrediction& t, std::int64_t type_id,
                                   double confidence) {
  db::AccelProjection row;
  row.run_id = run_id;
  row.gradient_run_id = p.gradient_run;
  row.link = p.link;
  row.type_id = type_id;
  row.added_delay_ns = p.added_delay_ns;
  row.confidence = confidence;
  if (t.samples > 0) row.baseline_ns = t.baseline_ns;
  if (t.missing) {
    row.missing = *t.missing;
  } else {
    row.predicted_ns = t.predicted_ns;
    row.ci_low_ns = t.ci_low_ns;
    row.ci_high_ns = t.ci_high_ns;
  }
  return row;
}

}  // namespace

std::int64_t store_accel_run(const std::string& db_path, const nlohmann::json& config,
                             std::int64_t started_ns, const std::vector<db::AccelResult>& results,
                             const std::optional<StoredProjection>& projection) {
  db::RunStart start;
  start.kind = db::RunKind::kAccel;
  start.config_json = config.dump();
  start.started_ns = started_ns;
  return store_finished_run(
      db_path, start, common::realtime_ns(), [&](db::Store& store, std::int64_t run_id) {
        for (db::AccelResult r : results) {
          r.run_id = run_id;
          store.add_accel_result(r);
        }
        if (!projection) return;
        const PredictionReport& report = *projection->report;
        for (const TypePrediction& t : report.types) {
          store.add_accel_projection(projection_row(
              run_id, *projection, t, store.transaction_type_id(t.type), report.confidence));
        }
      });
}

}  // namespace nabla::coordinator
