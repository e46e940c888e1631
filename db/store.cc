#include "nabla/db/store.hh"

#include <sqlite3.h>

#include <string_view>
#include <utility>

#include "nabla/db/migrations.hh"
#include "nabla/db/reads.hh"

namespace nabla::db {
namespace {

// Prepares `sql` (an INSERT), binds `values` to its parameters 1..N in the
// order given, runs it once and returns the new rowid. The values are listed
// in the order of the SQL's column list, so the two read side by side.
template <typename... Values>
std::int64_t insert(Database& db, std::string_view sql, const Values&... values) {
  Statement st(db, sql);
  int index = 0;
  (st.bind(++index, values), ...);
  st.run();
  return db.last_insert_rowid();
}

}  // namespace

Store::Store(Database db) : db_(std::move(db)), owner_(current_process()) {}

Store Store::open(const std::string& path, std::int64_t now_ns) {
  Store store(Database::open(path, OpenMode::kReadWriteCreate));
  migrate(store.db_);
  store.recover_interrupted_runs(now_ns);
  return store;
}

Store Store::open_read_only(const std::string& path) {
  Store store(Database::open(path, OpenMode::kReadOnly));
  require_current_schema(store.db_);
  return store;
}

std::int64_t Store::create_campaign(const Campaign& campaign) {
  return insert(db_, "INSERT INTO campaigns (name, spec, created_ns) VALUES (?, ?, ?)",
                campaign.name, campaign.spec_json, campaign.created_ns);
}

std::int64_t Store::begin_run(const RunStart& run) {
  return insert(db_,
                "INSERT INTO runs (campaign_id, kind, status, config, host_info, tool_version, "
                "seed, started_ns, pid, pid_start_ticks, boot_id) "
                "VALUES (?, ?, 'running', ?, ?, ?, ?, ?, ?, ?, ?)",
                run.campaign_id, to_string(run.kind), run.config_json, run.host_info_json,
                run.tool_version, run.seed, run.started_ns, owner_.pid, owner_.start_ticks,
                owner_.boot_id);
}

void Store::finish_run(std::int64_t run_id, RunStatus status, std::int64_t ended_ns,
                       std::optional<std::string> error) {
  if (status == RunStatus::kRunning) {
    throw Error(SQLITE_MISUSE, "finish_run needs complete or failed", "");
  }
  Statement st(db_,
               "UPDATE runs SET status = ?, ended_ns = ?, error = ? "
               "WHERE id = ? AND status = 'running'");
  st.bind(1, to_string(status)).bind(2, ended_ns).bind(3, error).bind(4, run_id);
  st.run();
  if (db_.changes() != 1) {
    throw Error(SQLITE_NOTFOUND, "run " + std::to_string(run_id) + " is not running", st.sql());
  }
}

std::optional<RunInfo> Store::get_run(std::int64_t run_id) {
  return find_run(db_, run_id);
}

std::vector<RunInfo> Store::list_runs(int limit) {
  return db::list_runs(db_, limit);
}

std::int64_t Store::add_node(const Node& node) {
  return insert(db_,
                "INSERT INTO nodes (run_id, name, address, injectd_addr, sniffd_addr) "
                "VALUES (?, ?, ?, ?, ?)",
                node.run_id, node.name, node.address, node.injectd_addr, node.sniffd_addr);
}

std::int64_t Store::add_link(const Link& link) {
  return insert(db_,
                "INSERT INTO links (run_id, proto, src_host, src_pid, src_comm, src_port, "
                "dst_host, dst_pid, dst_comm, dst_port) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                link.run_id, link.proto, link.src_host, link.src_pid, link.src_comm, link.src_port,
                link.dst_host, link.dst_pid, link.dst_comm, link.dst_port);
}

std::int64_t Store::add_flow(const Flow& flow) {
  return insert(db_,
                "INSERT INTO flows (run_id, node_id, link_id, proto, local_addr, local_port, "
                "remote_addr, remote_port, pid, comm, direction, segs_out, segs_in, bytes_out, "
                "bytes_in, first_seen_ns, last_seen_ns) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                flow.run_id, flow.node_id, flow.link_id, flow.proto, flow.local_addr,
                flow.local_port, flow.remote_addr, flow.remote_port, flow.pid, flow.comm,
                flow.direction, flow.segs_out, flow.segs_in, flow.bytes_out, flow.bytes_in,
                flow.first_seen_ns, flow.last_seen_ns);
}

std::int64_t Store::add_phase(const Phase& phase) {
  return insert(db_,
                "INSERT INTO phases (run_id, kind, link_id, started_ns, ended_ns, bin_width_ns, "
                "bins, chunks, k_d, amplitude_ns) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                phase.run_id, to_string(phase.kind), phase.link_id, phase.started_ns,
                phase.ended_ns, phase.bin_width_ns, phase.bins, phase.chunks, phase.k_d,
                phase.amplitude_ns);
}

void Store::end_phase(std::int64_t phase_id, std::int64_t ended_ns) {
  Statement st(db_, "UPDATE phases SET ended_ns = ? WHERE id = ?");
  st.bind(1, ended_ns).bind(2, phase_id);
  st.run();
  if (db_.changes() != 1) {
    throw Error(SQLITE_NOTFOUND, "no phase " + std::to_string(phase_id), st.sql());
  }
}

std::int64_t Store::add_injection(const Injection& in) {
  return insert(db_,
                "INSERT INTO injections (run_id, phase_id, link_id, node, waveform, spec, "
                "requested_delay_ns, period_ns, duty, seed, started_ns, ended_ns, packets, bytes, "
                "delayed, dropped, actual_mean_ns, actual_std_ns, actual_p50_ns, actual_p99_ns, "
                "actual_max_ns) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                in.run_id, in.phase_id, in.link_id, in.node, in.waveform, in.spec_json,
                in.requested_delay_ns, in.period_ns, in.duty, in.seed, in.started_ns, in.ended_ns,
                in.packets, in.bytes, in.delayed, in.dropped, in.actual_mean_ns, in.actual_std_ns,
                in.actual_p50_ns, in.actual_p99_ns, in.actual_max_ns);
}

std::int64_t Store::add_gradient(const Gradient& g) {
  return insert(db_,
                "INSERT INTO gradients (run_id, link_id, type_id, phase_id, value, ci_low, "
                "ci_high, confidence, time_domain, actual_amplitude_ns, perturbation_ns, "
                "throughput_change, k_d, bins, schedule, step_value, step_ci_low, step_ci_high, "
                "messages_per_txn, messages_ci_low, messages_ci_high) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                g.run_id, g.link_id, g.type_id, g.phase_id, g.value, g.ci_low, g.ci_high,
                g.confidence, g.time_domain, g.actual_amplitude_ns, g.perturbation_ns,
                g.throughput_change, g.k_d, g.bins, g.schedule, g.step_value, g.step_ci_low,
                g.step_ci_high, g.messages_per_txn, g.messages_ci_low, g.messages_ci_high);
}

std::int64_t Store::add_gradient_amplitude(const GradientAmplitude& a) {
  return insert(db_,
                "INSERT INTO gradient_amplitudes (run_id, gradient_id, phase_id, amplitude_ns, "
                "actual_amplitude_ns, value, ci_low, ci_high) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                a.run_id, a.gradient_id, a.phase_id, a.amplitude_ns, a.actual_amplitude_ns, a.value,
                a.ci_low, a.ci_high);
}

std::int64_t Store::add_tail_result(const TailResult& t) {
  std::optional<std::int64_t> source;
  if (t.source) source = static_cast<std::int64_t>(*t.source);
  return insert(db_,
                "INSERT INTO tail_results (run_id, type_id, metric, rate_rps, throughput_rps, "
                "percentile, value_ns, ci_low_ns, ci_high_ns, confidence, verdict, reasons, "
                "samples, late_sends, ts_source) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                t.run_id, t.type_id, t.metric, t.rate_rps, t.throughput_rps, t.percentile,
                t.value_ns, t.ci_low_ns, t.ci_high_ns, t.confidence, t.ok ? "ok" : "n/a",
                t.reasons_json, t.samples, t.late_sends, source);
}

std::int64_t Store::add_load_check(const LoadCheck& c) {
  return insert(db_,
                "INSERT INTO load_checks (run_id, rate_rps, position, name, outcome, statistic, "
                "threshold, p_value, samples, detail) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                c.run_id, c.rate_rps, c.position, c.name, c.outcome, c.statistic, c.threshold,
                c.p_value, c.samples, c.detail);
}

std::int64_t Store::add_load_agent(const LoadAgent& a) {
  return insert(db_,
                "INSERT INTO load_agents (run_id, rate_rps, agent, kind, share_rps, rounds, "
                "rounds_failed, sent, completed, late, errors, samples, timer_lateness_p99_ns, "
                "reasons) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                a.run_id, a.rate_rps, a.agent, a.kind, a.share_rps, a.rounds, a.rounds_failed,
                a.sent, a.completed, a.late, a.errors, a.samples, a.timer_lateness_p99_ns,
                a.reasons_json);
}

std::int64_t Store::add_memlat_sample(const MemlatSample& m) {
  return insert(db_,
                "INSERT INTO memlat (run_id, t_ns, interval_ns, latency_ns, frequency_ghz, "
                "cycles, ref_cycles, outstanding, requests, target, rpq_occupancy, rpq_inserts, "
                "imc_clockticks, imc_latency_ns) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                m.run_id, m.t_ns, m.interval_ns, m.latency_ns, m.frequency_ghz, m.cycles,
                m.ref_cycles, m.outstanding, m.requests, m.target, m.rpq_occupancy, m.rpq_inserts,
                m.imc_clockticks, m.imc_latency_ns);
}

std::int64_t Store::add_memlat_probe_point(const MemlatProbePoint& p) {
  return insert(db_,
                "INSERT INTO memlat_probe (run_id, buffer_bytes, load_threads, latency_ns, "
                "huge_pages) VALUES (?, ?, ?, ?, ?)",
                p.run_id, p.buffer_bytes, static_cast<std::int64_t>(p.load_threads), p.latency_ns,
                static_cast<std::int64_t>(p.huge_pages ? 1 : 0));
}

std::int64_t Store::add_accel_result(const AccelResult& r) {
  return insert(db_,
                "INSERT INTO accel_results (run_id, kernel, strategy, design, cycles, alpha, "
                "accel_factor, offloads_per_s, o0, l_cycles, q_cycles, o1, cycles_per_byte, beta, "
                "speedup, latency_reduction, min_bytes_speedup, min_bytes_latency) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                r.run_id, r.kernel, r.strategy, r.design, r.cycles, r.alpha, r.accel_factor,
                r.offloads_per_s, r.o0, r.l_cycles, r.q_cycles, r.o1, r.cycles_per_byte, r.beta,
                r.speedup, r.latency_reduction, r.min_bytes_speedup, r.min_bytes_latency);
}

std::int64_t Store::add_accel_projection(const AccelProjection& p) {
  return insert(db_,
                "INSERT INTO accel_projections (run_id, gradient_run_id, link, type_id, "
                "added_delay_ns, baseline_ns, predicted_ns, ci_low_ns, ci_high_ns, confidence, "
                "missing) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                p.run_id, p.gradient_run_id, p.link, p.type_id, p.added_delay_ns, p.baseline_ns,
                p.predicted_ns, p.ci_low_ns, p.ci_high_ns, p.confidence, p.missing);
}

std::int64_t Store::add_experiment(const Experiment& e) {
  return insert(db_,
                "INSERT INTO experiments (run_id, name, spec, links, started_ns, fault_start_ns, "
                "fault_end_ns, ended_ns, verdict, mean_delay_ns, observed_change_ns, "
                "observed_ci_low_ns, observed_ci_high_ns, predicted_change_ns, "
                "predicted_ci_low_ns, predicted_ci_high_ns) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                e.run_id, e.name, e.spec_json, e.links_json, e.started_ns, e.fault_start_ns,
                e.fault_end_ns, e.ended_ns, e.verdict, e.mean_delay_ns, e.observed_change_ns,
                e.observed_ci_low_ns, e.observed_ci_high_ns, e.predicted_change_ns,
                e.predicted_ci_low_ns, e.predicted_ci_high_ns);
}

std::int64_t Store::add_experiment_check(const ExperimentCheck& c) {
  return insert(db_,
                "INSERT INTO experiment_checks (experiment_id, window, term, bound, value, "
                "ci_low, ci_high, verdict, extra_ns, note, samples, scheduled) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                c.experiment_id, c.window, c.term, c.bound, c.value, c.ci_low, c.ci_high, c.verdict,
                c.extra_ns, c.note, c.samples, c.scheduled);
}

std::int64_t Store::transaction_type_id(std::string_view name) {
  std::string key(name);
  if (auto it = type_ids_.find(key); it != type_ids_.end()) return it->second;
  // Upsert-and-return in one statement; the no-op DO UPDATE makes RETURNING
  // produce the existing row's id too.
  Statement st(db_,
               "INSERT INTO transaction_types (name) VALUES (?) "
               "ON CONFLICT (name) DO UPDATE SET name = excluded.name RETURNING id");
  st.bind(1, key);
  st.step();
  const std::int64_t id = st.column_int64(0);
  st.reset();
  type_ids_.emplace(std::move(key), id);
  return id;
}

SampleWriter Store::sample_writer(std::int64_t run_id, std::size_t batch_rows) {
  return SampleWriter(db_, run_id, batch_rows);
}

std::int64_t Store::for_each_sample(std::int64_t run_id,
                                    const std::function<void(const Sample&)>& visit) {
  Statement st(db_,
               "SELECT phase_id, send_ns, latency_ns, service_ns, type_id, ts_source "
               "FROM samples WHERE run_id = ? ORDER BY send_ns, rowid");
  st.bind(1, run_id);
  std::int64_t rows = 0;
  Sample s;
  while (st.step()) {
    s.phase_id = st.optional_int64(0);
    s.send_ns = st.column_int64(1);
    s.latency_ns = st.column_int64(2);
    s.service_ns = st.optional_int64(3);
    s.type_id = st.column_int64(4);
    s.source = static_cast<TimestampSource>(st.column_int64(5));
    visit(s);
    ++rows;
  }
  return rows;
}

std::vector<std::int64_t> Store::recover_interrupted_runs(std::int64_t now_ns) {
  struct Orphan {
    std::int64_t id;
    std::string error;
  };
  std::vector<Orphan> orphans;
  Transaction tx(db_);
  {
    Statement st(db_,
                 "SELECT id, pid, pid_start_ticks, boot_id FROM runs WHERE status = 'running'");
    while (st.step()) {
      ProcessIdentity owner{static_cast<pid_t>(st.column_int64(1)), st.column_int64(2),
                            st.column_text(3)};
      if (is_alive(owner)) continue;
      std::string error =
          owner.boot_id != owner_.boot_id
              ? "interrupted (host rebooted since process " + std::to_string(owner.pid) +
                    " started it)"
              : "interrupted (process " + std::to_string(owner.pid) + " no longer running)";
      orphans.push_back({st.column_int64(0), std::move(error)});
    }
  }
  Statement mark(db_,
                 "UPDATE runs SET status = 'failed', ended_ns = max(?, started_ns), error = ? "
                 "WHERE id = ? AND status = 'running'");
  std::vector<std::int64_t> ids;
  for (const Orphan& o : orphans) {
    mark.bind(1, now_ns).bind(2, o.error).bind(3, o.id);
    mark.run();
    ids.push_back(o.id);
  }
  tx.commit();
  return ids;
}

}  // namespace nabla::db
