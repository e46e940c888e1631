#include "nabla/db/store.hh"

#include <sqlite3.h>

#include <utility>

#include "nabla/db/migrations.hh"

namespace nabla::db {
namespace {

constexpr const char* kRunColumns =
    "SELECT id, campaign_id, kind, status, config, host_info, tool_version, seed, started_ns, "
    "ended_ns, error, pid FROM runs";

RunInfo read_run(const Statement& st) {
  RunInfo run;
  run.id = st.column_int64(0);
  run.campaign_id = st.optional_int64(1);
  run.kind = parse_run_kind(st.column_text(2));
  run.status = parse_run_status(st.column_text(3));
  run.config_json = st.column_text(4);
  run.host_info_json = st.column_text(5);
  run.tool_version = st.column_text(6);
  run.seed = st.optional_int64(7);
  run.started_ns = st.column_int64(8);
  run.ended_ns = st.optional_int64(9);
  run.error = st.optional_text(10);
  run.pid = st.column_int64(11);
  return run;
}

// Runs a prepared INSERT once and returns the new rowid.
std::int64_t insert(Database& db, Statement& st) {
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
  Statement st(db_, "INSERT INTO campaigns (name, spec, created_ns) VALUES (?, ?, ?)");
  st.bind(1, campaign.name).bind(2, campaign.spec_json).bind(3, campaign.created_ns);
  return insert(db_, st);
}

std::int64_t Store::begin_run(const RunStart& run) {
  Statement st(db_,
               "INSERT INTO runs (campaign_id, kind, status, config, host_info, tool_version, "
               "seed, started_ns, pid, pid_start_ticks, boot_id) "
               "VALUES (?, ?, 'running', ?, ?, ?, ?, ?, ?, ?, ?)");
  st.bind(1, run.campaign_id)
      .bind(2, to_string(run.kind))
      .bind(3, run.config_json)
      .bind(4, run.host_info_json)
      .bind(5, run.tool_version)
      .bind(6, run.seed)
      .bind(7, run.started_ns)
      .bind(8, owner_.pid)
      .bind(9, owner_.start_ticks)
      .bind(10, owner_.boot_id);
  return insert(db_, st);
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
  Statement st(db_, std::string(kRunColumns) + " WHERE id = ?");
  st.bind(1, run_id);
  if (!st.step()) return std::nullopt;
  return read_run(st);
}

std::vector<RunInfo> Store::list_runs(int limit) {
  Statement st(db_, std::string(kRunColumns) + " ORDER BY started_ns DESC, id DESC LIMIT ?");
  st.bind(1, limit > 0 ? limit : -1);
  std::vector<RunInfo> runs;
  while (st.step()) runs.push_back(read_run(st));
  return runs;
}

std::int64_t Store::add_node(const Node& node) {
  Statement st(db_,
               "INSERT INTO nodes (run_id, name, address, injectd_addr, sniffd_addr) "
               "VALUES (?, ?, ?, ?, ?)");
  st.bind(1, node.run_id)
      .bind(2, node.name)
      .bind(3, node.address)
      .bind(4, node.injectd_addr)
      .bind(5, node.sniffd_addr);
  return insert(db_, st);
}

std::int64_t Store::add_link(const Link& link) {
  Statement st(db_,
               "INSERT INTO links (run_id, proto, src_host, src_pid, src_comm, src_port, "
               "dst_host, dst_pid, dst_comm, dst_port) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
  st.bind(1, link.run_id)
      .bind(2, link.proto)
      .bind(3, link.src_host)
      .bind(4, link.src_pid)
      .bind(5, link.src_comm)
      .bind(6, link.src_port)
      .bind(7, link.dst_host)
      .bind(8, link.dst_pid)
      .bind(9, link.dst_comm)
      .bind(10, link.dst_port);
  return insert(db_, st);
}

std::int64_t Store::add_flow(const Flow& flow) {
  Statement st(db_,
               "INSERT INTO flows (run_id, node_id, link_id, proto, local_addr, local_port, "
               "remote_addr, remote_port, pid, comm, direction, segs_out, segs_in, bytes_out, "
               "bytes_in, first_seen_ns, last_seen_ns) "
               "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
  st.bind(1, flow.run_id)
      .bind(2, flow.node_id)
      .bind(3, flow.link_id)
      .bind(4, flow.proto)
      .bind(5, flow.local_addr)
      .bind(6, flow.local_port)
      .bind(7, flow.remote_addr)
      .bind(8, flow.remote_port)
      .bind(9, flow.pid)
      .bind(10, flow.comm)
      .bind(11, flow.direction)
      .bind(12, flow.segs_out)
      .bind(13, flow.segs_in)
      .bind(14, flow.bytes_out)
      .bind(15, flow.bytes_in)
      .bind(16, flow.first_seen_ns)
      .bind(17, flow.last_seen_ns);
  return insert(db_, st);
}

std::int64_t Store::add_phase(const Phase& phase) {
  Statement st(db_,
               "INSERT INTO phases (run_id, kind, link_id, started_ns, ended_ns, bin_width_ns, "
               "bins, chunks, k_d, amplitude_ns) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
  st.bind(1, phase.run_id)
      .bind(2, to_string(phase.kind))
      .bind(3, phase.link_id)
      .bind(4, phase.started_ns)
      .bind(5, phase.ended_ns)
      .bind(6, phase.bin_width_ns)
      .bind(7, phase.bins)
      .bind(8, phase.chunks)
      .bind(9, phase.k_d)
      .bind(10, phase.amplitude_ns);
  return insert(db_, st);
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
  Statement st(db_,
               "INSERT INTO injections (run_id, phase_id, link_id, node, waveform, spec, "
               "requested_delay_ns, period_ns, duty, seed, started_ns, ended_ns, packets, bytes, "
               "delayed, dropped, actual_mean_ns, actual_std_ns, actual_p50_ns, actual_p99_ns, "
               "actual_max_ns) "
               "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
  st.bind(1, in.run_id)
      .bind(2, in.phase_id)
      .bind(3, in.link_id)
      .bind(4, in.node)
      .bind(5, in.waveform)
      .bind(6, in.spec_json)
      .bind(7, in.requested_delay_ns)
      .bind(8, in.period_ns)
      .bind(9, in.duty)
      .bind(10, in.seed)
      .bind(11, in.started_ns)
      .bind(12, in.ended_ns)
      .bind(13, in.packets)
      .bind(14, in.bytes)
      .bind(15, in.delayed)
      .bind(16, in.dropped)
      .bind(17, in.actual_mean_ns)
      .bind(18, in.actual_std_ns)
      .bind(19, in.actual_p50_ns)
      .bind(20, in.actual_p99_ns)
      .bind(21, in.actual_max_ns);
  return insert(db_, st);
}

std::int64_t Store::add_gradient(const Gradient& g) {
  Statement st(db_,
               "INSERT INTO gradients (run_id, link_id, type_id, phase_id, value, ci_low, "
               "ci_high, confidence, time_domain, actual_amplitude_ns, perturbation_ns, "
               "throughput_change, k_d, bins) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
  st.bind(1, g.run_id)
      .bind(2, g.link_id)
      .bind(3, g.type_id)
      .bind(4, g.phase_id)
      .bind(5, g.value)
      .bind(6, g.ci_low)
      .bind(7, g.ci_high)
      .bind(8, g.confidence)
      .bind(9, g.time_domain)
      .bind(10, g.actual_amplitude_ns)
      .bind(11, g.perturbation_ns)
      .bind(12, g.throughput_change)
      .bind(13, g.k_d)
      .bind(14, g.bins);
  return insert(db_, st);
}

std::int64_t Store::add_tail_result(const TailResult& t) {
  Statement st(db_,
               "INSERT INTO tail_results (run_id, type_id, metric, rate_rps, throughput_rps, "
               "percentile, value_ns, ci_low_ns, ci_high_ns, confidence, verdict, reasons, "
               "samples, late_sends, ts_source) "
               "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
  std::optional<std::int64_t> source;
  if (t.source) source = static_cast<std::int64_t>(*t.source);
  st.bind(1, t.run_id)
      .bind(2, t.type_id)
      .bind(3, t.metric)
      .bind(4, t.rate_rps)
      .bind(5, t.throughput_rps)
      .bind(6, t.percentile)
      .bind(7, t.value_ns)
      .bind(8, t.ci_low_ns)
      .bind(9, t.ci_high_ns)
      .bind(10, t.confidence)
      .bind(11, t.ok ? "ok" : "n/a")
      .bind(12, t.reasons_json)
      .bind(13, t.samples)
      .bind(14, t.late_sends)
      .bind(15, source);
  return insert(db_, st);
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
