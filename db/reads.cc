#include "nabla/db/reads.hh"

#include <stdexcept>
#include <string_view>
#include <type_traits>
#include <utility>

#include "nabla/db/sqlite.hh"

namespace nabla::db {
namespace {

// Reads the current row of a statement by column name (the SELECT's
// aliases), so a reader cannot drift from its SELECT list by position. A
// name the SELECT lacks is a bug in this file, reported naming it.
class Columns {
 public:
  explicit Columns(const Statement& st) : st_(st) {
    for (int i = 0; i < st.column_count(); ++i) names_.push_back(st.column_name(i));
  }

  std::int64_t int64(std::string_view name) const { return st_.column_int64(index(name)); }
  double real(std::string_view name) const { return st_.column_double(index(name)); }
  std::string text(std::string_view name) const { return st_.column_text(index(name)); }
  std::optional<std::int64_t> optional_int64(std::string_view name) const {
    return st_.optional_int64(index(name));
  }
  std::optional<double> optional_real(std::string_view name) const {
    return st_.optional_double(index(name));
  }
  std::optional<std::string> optional_text(std::string_view name) const {
    return st_.optional_text(index(name));
  }

 private:
  int index(std::string_view name) const {
    for (std::size_t i = 0; i < names_.size(); ++i) {
      if (names_[i] == name) return static_cast<int>(i);
    }
    throw std::logic_error("db: no column '" + std::string(name) + "' in: " + st_.sql());
  }

  const Statement& st_;
  std::vector<std::string> names_;
};

// Steps `st` to the end and returns read(columns) of every row.
template <typename Read>
auto read_rows(Statement& st, Read read) {
  const Columns columns(st);
  std::vector<std::invoke_result_t<Read, const Columns&>> rows;
  while (st.step()) rows.push_back(read(columns));
  return rows;
}

template <typename Read>
auto read_first(Statement& st, Read read)
    -> std::optional<std::invoke_result_t<Read, const Columns&>> {
  const Columns columns(st);
  if (!st.step()) return std::nullopt;
  return read(columns);
}

std::int64_t sqlite_limit(int limit) {
  return limit > 0 ? limit : -1;  // LIMIT -1: no limit
}

constexpr const char* kRunSelect =
    "SELECT id, campaign_id, kind, status, config, host_info, tool_version, seed, started_ns, "
    "ended_ns, error, pid FROM runs ";

RunInfo read_run(const Columns& c) {
  RunInfo run;
  run.id = c.int64("id");
  run.campaign_id = c.optional_int64("campaign_id");
  run.kind = parse_run_kind(c.text("kind"));
  run.status = parse_run_status(c.text("status"));
  run.config_json = c.text("config");
  run.host_info_json = c.text("host_info");
  run.tool_version = c.text("tool_version");
  run.seed = c.optional_int64("seed");
  run.started_ns = c.int64("started_ns");
  run.ended_ns = c.optional_int64("ended_ns");
  run.error = c.optional_text("error");
  run.pid = c.int64("pid");
  return run;
}

constexpr const char* kRunSummarySelect =
    "SELECT run_id, campaign, kind, status, started, duration_s, links, samples, gradients, "
    "tail_results, error FROM run_summary ";

RunSummary read_run_summary(const Columns& c) {
  RunSummary s;
  s.run_id = c.int64("run_id");
  s.campaign = c.optional_text("campaign");
  s.kind = parse_run_kind(c.text("kind"));
  s.status = parse_run_status(c.text("status"));
  s.started = c.text("started");
  s.duration_s = c.optional_real("duration_s");
  s.links = c.int64("links");
  s.samples = c.int64("samples");
  s.gradients = c.int64("gradients");
  s.tail_results = c.int64("tail_results");
  s.error = c.optional_text("error");
  return s;
}

// The columns read_link_row reads, from the links table aliased `l`.
constexpr const char* kLinkColumns =
    "l.id AS link_id, l.label AS link_label, l.run_id AS run_id, l.proto AS proto, "
    "l.src_host AS src_host, l.src_pid AS src_pid, l.src_comm AS src_comm, "
    "l.src_port AS src_port, l.dst_host AS dst_host, l.dst_pid AS dst_pid, "
    "l.dst_comm AS dst_comm, l.dst_port AS dst_port";

LinkRow read_link_row(const Columns& c) {
  LinkRow row;
  row.id = c.int64("link_id");
  row.label = c.text("link_label");
  Link& l = row.link;
  l.run_id = c.int64("run_id");
  l.proto = c.text("proto");
  l.src_host = c.text("src_host");
  l.src_pid = c.optional_int64("src_pid");
  l.src_comm = c.optional_text("src_comm");
  l.src_port = static_cast<int>(c.int64("src_port"));
  l.dst_host = c.text("dst_host");
  l.dst_pid = c.optional_int64("dst_pid");
  l.dst_comm = c.optional_text("dst_comm");
  l.dst_port = static_cast<int>(c.int64("dst_port"));
  return row;
}

PhaseRow read_phase_row(const Columns& c) {
  PhaseRow row;
  row.id = c.int64("id");
  Phase& p = row.phase;
  p.run_id = c.int64("run_id");
  p.kind = parse_phase_kind(c.text("kind"));
  p.link_id = c.optional_int64("link_id");
  p.started_ns = c.int64("started_ns");
  p.ended_ns = c.optional_int64("ended_ns");
  p.bin_width_ns = c.optional_int64("bin_width_ns");
  p.bins = c.optional_int64("bins");
  p.chunks = c.optional_int64("chunks");
  p.k_d = c.optional_int64("k_d");
  p.amplitude_ns = c.optional_int64("amplitude_ns");
  row.samples = c.int64("samples");
  row.first_send_ns = c.optional_int64("first_send_ns");
  row.last_send_ns = c.optional_int64("last_send_ns");
  return row;
}

GradientRow read_gradient_row(const Columns& c) {
  GradientRow row;
  row.id = c.int64("gradient_id");
  row.link = read_link_row(c);
  row.type = c.text("type");
  Gradient& g = row.gradient;
  g.run_id = c.int64("run_id");
  g.link_id = row.link.id;
  g.type_id = c.int64("type_id");
  g.phase_id = c.optional_int64("phase_id");
  g.value = c.real("value");
  g.ci_low = c.optional_real("ci_low");
  g.ci_high = c.optional_real("ci_high");
  g.confidence = c.real("confidence");
  g.time_domain = c.optional_real("time_domain");
  g.actual_amplitude_ns = c.optional_real("actual_amplitude_ns");
  g.perturbation_ns = c.optional_real("perturbation_ns");
  g.throughput_change = c.optional_real("throughput_change");
  g.k_d = c.optional_int64("k_d");
  g.bins = c.optional_int64("bins");
  g.schedule = c.optional_text("schedule");
  g.step_value = c.optional_real("step_value");
  g.step_ci_low = c.optional_real("step_ci_low");
  g.step_ci_high = c.optional_real("step_ci_high");
  g.messages_per_txn = c.optional_real("messages_per_txn");
  g.messages_ci_low = c.optional_real("messages_ci_low");
  g.messages_ci_high = c.optional_real("messages_ci_high");
  return row;
}

TailResultRow read_tail_result_row(const Columns& c) {
  TailResultRow row;
  row.id = c.int64("id");
  row.type = c.optional_text("type");
  TailResult& t = row.result;
  t.run_id = c.int64("run_id");
  t.type_id = c.optional_int64("type_id");
  t.metric = c.text("metric");
  t.rate_rps = c.real("rate_rps");
  t.throughput_rps = c.optional_real("throughput_rps");
  t.percentile = c.real("percentile");
  t.value_ns = c.optional_real("value_ns");
  t.ci_low_ns = c.optional_real("ci_low_ns");
  t.ci_high_ns = c.optional_real("ci_high_ns");
  t.confidence = c.real("confidence");
  t.ok = c.text("verdict") == "ok";
  t.reasons_json = c.text("reasons");
  t.samples = c.optional_int64("samples");
  t.late_sends = c.optional_int64("late_sends");
  if (const auto source = c.optional_int64("ts_source")) {
    t.source = static_cast<TimestampSource>(*source);
  }
  return row;
}

InjectionRow read_injection_row(const Columns& c) {
  InjectionRow row;
  row.id = c.int64("id");
  row.link_label = c.optional_text("link_label");
  Injection& i = row.injection;
  i.run_id = c.int64("run_id");
  i.phase_id = c.optional_int64("phase_id");
  i.link_id = c.optional_int64("link_id");
  i.node = c.optional_text("node");
  i.waveform = c.text("waveform");
  i.spec_json = c.text("spec");
  i.requested_delay_ns = c.int64("requested_delay_ns");
  i.period_ns = c.optional_int64("period_ns");
  i.duty = c.optional_real("duty");
  i.seed = c.optional_int64("seed");
  i.started_ns = c.int64("started_ns");
  i.ended_ns = c.optional_int64("ended_ns");
  i.packets = c.int64("packets");
  i.bytes = c.int64("bytes");
  i.delayed = c.int64("delayed");
  i.dropped = c.int64("dropped");
  i.actual_mean_ns = c.optional_real("actual_mean_ns");
  i.actual_std_ns = c.optional_real("actual_std_ns");
  i.actual_p50_ns = c.optional_real("actual_p50_ns");
  i.actual_p99_ns = c.optional_real("actual_p99_ns");
  i.actual_max_ns = c.optional_real("actual_max_ns");
  return row;
}

}  // namespace

std::vector<RunSummary> list_run_summaries(Database& db, int limit) {
  Statement st(db, std::string(kRunSummarySelect) + "ORDER BY run_id DESC LIMIT ?");
  st.bind(1, sqlite_limit(limit));
  return read_rows(st, read_run_summary);
}

std::optional<RunSummary> find_run_summary(Database& db, std::int64_t run_id) {
  Statement st(db, std::string(kRunSummarySelect) + "WHERE run_id = ?");
  st.bind(1, run_id);
  return read_first(st, read_run_summary);
}

std::optional<RunInfo> find_run(Database& db, std::int64_t run_id) {
  Statement st(db, std::string(kRunSelect) + "WHERE id = ?");
  st.bind(1, run_id);
  return read_first(st, read_run);
}

std::vector<RunInfo> list_runs(Database& db, int limit) {
  Statement st(db, std::string(kRunSelect) + "ORDER BY started_ns DESC, id DESC LIMIT ?");
  st.bind(1, sqlite_limit(limit));
  return read_rows(st, read_run);
}

std::optional<RunInfo> newest_run_of_kind(Database& db, RunKind kind,
                                          std::int64_t started_since_ns) {
  Statement st(
      db, std::string(kRunSelect) + "WHERE kind = ? AND started_ns >= ? ORDER BY id DESC LIMIT 1");
  st.bind(1, to_string(kind)).bind(2, started_since_ns);
  return read_first(st, read_run);
}

std::optional<Campaign> find_campaign(Database& db, std::int64_t campaign_id) {
  Statement st(db, "SELECT name, spec, created_ns FROM campaigns WHERE id = ?");
  st.bind(1, campaign_id);
  return read_first(st, [](const Columns& c) {
    return Campaign{c.text("name"), c.text("spec"), c.int64("created_ns")};
  });
}

std::vector<Node> run_nodes(Database& db, std::int64_t run_id) {
  Statement st(db,
               "SELECT run_id, name, address, injectd_addr, sniffd_addr FROM nodes "
               "WHERE run_id = ? ORDER BY id");
  st.bind(1, run_id);
  return read_rows(st, [](const Columns& c) {
    return Node{c.int64("run_id"), c.text("name"), c.optional_text("address"),
                c.optional_text("injectd_addr"), c.optional_text("sniffd_addr")};
  });
}

std::vector<LinkRow> run_links(Database& db, std::int64_t run_id) {
  Statement st(
      db, std::string("SELECT ") + kLinkColumns + " FROM links l WHERE l.run_id = ? ORDER BY l.id");
  st.bind(1, run_id);
  return read_rows(st, read_link_row);
}

std::vector<PhaseRow> run_phases(Database& db, std::int64_t run_id) {
  Statement st(db,
               "SELECT p.id AS id, p.run_id AS run_id, p.kind AS kind, p.link_id AS link_id, "
               "p.started_ns AS started_ns, p.ended_ns AS ended_ns, "
               "p.bin_width_ns AS bin_width_ns, p.bins AS bins, p.chunks AS chunks, "
               "p.k_d AS k_d, p.amplitude_ns AS amplitude_ns, count(s.send_ns) AS samples, "
               "min(s.send_ns) AS first_send_ns, max(s.send_ns) AS last_send_ns "
               "FROM phases p LEFT JOIN samples s ON s.phase_id = p.id "
               "WHERE p.run_id = ? GROUP BY p.id ORDER BY p.id");
  st.bind(1, run_id);
  return read_rows(st, read_phase_row);
}

std::vector<InjectionRow> run_injections(Database& db, std::int64_t run_id) {
  Statement st(db,
               "SELECT i.id AS id, l.label AS link_label, i.run_id AS run_id, "
               "i.phase_id AS phase_id, i.link_id AS link_id, i.node AS node, "
               "i.waveform AS waveform, i.spec AS spec, "
               "i.requested_delay_ns AS requested_delay_ns, i.period_ns AS period_ns, "
               "i.duty AS duty, i.seed AS seed, i.started_ns AS started_ns, "
               "i.ended_ns AS ended_ns, i.packets AS packets, i.bytes AS bytes, "
               "i.delayed AS delayed, i.dropped AS dropped, i.actual_mean_ns AS actual_mean_ns, "
               "i.actual_std_ns AS actual_std_ns, i.actual_p50_ns AS actual_p50_ns, "
               "i.actual_p99_ns AS actual_p99_ns, i.actual_max_ns AS actual_max_ns "
               "FROM injections i LEFT JOIN links l ON l.id = i.link_id "
               "WHERE i.run_id = ? ORDER BY i.id");
  st.bind(1, run_id);
  return read_rows(st, read_injection_row);
}

std::vector<GradientRow> run_gradients(Database& db, std::int64_t run_id) {
  Statement st(db,
               std::string("SELECT g.id AS gradient_id, ") + kLinkColumns +
                   ", g.type_id AS type_id, tt.name AS type, g.phase_id AS phase_id, "
                   "g.value AS value, g.ci_low AS ci_low, g.ci_high AS ci_high, "
                   "g.confidence AS confidence, g.time_domain AS time_domain, "
                   "g.actual_amplitude_ns AS actual_amplitude_ns, "
                   "g.perturbation_ns AS perturbation_ns, "
                   "g.throughput_change AS throughput_change, g.k_d AS k_d, g.bins AS bins, "
                   "g.schedule AS schedule, g.step_value AS step_value, "
                   "g.step_ci_low AS step_ci_low, g.step_ci_high AS step_ci_high, "
                   "g.messages_per_txn AS messages_per_txn, "
                   "g.messages_ci_low AS messages_ci_low, g.messages_ci_high AS messages_ci_high "
                   "FROM gradients g JOIN links l ON l.id = g.link_id "
                   "JOIN transaction_types tt ON tt.id = g.type_id "
                   "WHERE g.run_id = ? ORDER BY l.label, tt.name");
  st.bind(1, run_id);
  return read_rows(st, read_gradient_row);
}

std::map<std::int64_t, std::vector<GradientAmplitude>> run_gradient_amplitudes(
    Database& db, std::int64_t run_id) {
  Statement st(db,
               "SELECT run_id, gradient_id, phase_id, amplitude_ns, actual_amplitude_ns, value, "
               "ci_low, ci_high FROM gradient_amplitudes WHERE run_id = ? "
               "ORDER BY gradient_id, amplitude_ns");
  st.bind(1, run_id);
  const Columns c(st);
  std::map<std::int64_t, std::vector<GradientAmplitude>> out;
  while (st.step()) {
    GradientAmplitude a;
    a.run_id = c.int64("run_id");
    a.gradient_id = c.int64("gradient_id");
    a.phase_id = c.optional_int64("phase_id");
    a.amplitude_ns = c.int64("amplitude_ns");
    a.actual_amplitude_ns = c.optional_real("actual_amplitude_ns");
    a.value = c.real("value");
    a.ci_low = c.optional_real("ci_low");
    a.ci_high = c.optional_real("ci_high");
    out[a.gradient_id].push_back(a);
  }
  return out;
}

std::vector<TailResultRow> run_tail_results(Database& db, std::int64_t run_id) {
  Statement st(db,
               "SELECT t.id AS id, t.run_id AS run_id, t.type_id AS type_id, tt.name AS type, "
               "t.metric AS metric, t.rate_rps AS rate_rps, t.throughput_rps AS throughput_rps, "
               "t.percentile AS percentile, t.value_ns AS value_ns, t.ci_low_ns AS ci_low_ns, "
               "t.ci_high_ns AS ci_high_ns, t.confidence AS confidence, t.verdict AS verdict, "
               "t.reasons AS reasons, t.samples AS samples, t.late_sends AS late_sends, "
               "t.ts_source AS ts_source "
               "FROM tail_results t LEFT JOIN transaction_types tt ON tt.id = t.type_id "
               "WHERE t.run_id = ? "
               "ORDER BY t.rate_rps, t.type_id IS NOT NULL, tt.name, t.metric, t.percentile");
  st.bind(1, run_id);
  return read_rows(st, read_tail_result_row);
}

std::vector<LoadCheck> run_load_checks(Database& db, std::int64_t run_id) {
  Statement st(db,
               "SELECT run_id, rate_rps, position, name, outcome, statistic, threshold, p_value, "
               "samples, detail FROM load_checks WHERE run_id = ? ORDER BY rate_rps, position, id");
  st.bind(1, run_id);
  return read_rows(st, [](const Columns& c) {
    LoadCheck l;
    l.run_id = c.int64("run_id");
    l.rate_rps = c.real("rate_rps");
    l.position = c.int64("position");
    l.name = c.text("name");
    l.outcome = c.text("outcome");
    l.statistic = c.optional_real("statistic");
    l.threshold = c.optional_real("threshold");
    l.p_value = c.optional_real("p_value");
    l.samples = c.optional_int64("samples");
    l.detail = c.text("detail");
    return l;
  });
}

std::vector<LoadAgent> run_load_agents(Database& db, std::int64_t run_id) {
  Statement st(db,
               "SELECT run_id, rate_rps, agent, kind, share_rps, rounds, rounds_failed, sent, "
               "completed, late, errors, samples, timer_lateness_p99_ns, reasons FROM load_agents "
               "WHERE run_id = ? ORDER BY rate_rps, id");
  st.bind(1, run_id);
  return read_rows(st, [](const Columns& c) {
    LoadAgent a;
    a.run_id = c.int64("run_id");
    a.rate_rps = c.real("rate_rps");
    a.agent = c.text("agent");
    a.kind = c.text("kind");
    a.share_rps = c.real("share_rps");
    a.rounds = c.int64("rounds");
    a.rounds_failed = c.int64("rounds_failed");
    a.sent = c.int64("sent");
    a.completed = c.int64("completed");
    a.late = c.int64("late");
    a.errors = c.int64("errors");
    a.samples = c.int64("samples");
    a.timer_lateness_p99_ns = c.optional_int64("timer_lateness_p99_ns");
    a.reasons_json = c.text("reasons");
    return a;
  });
}

ServiceLoad run_service_load(Database& db, std::int64_t run_id) {
  ServiceLoad load;
  Statement service(db,
                    "SELECT COUNT(service_ns) AS n, AVG(service_ns) AS mean FROM samples "
                    "WHERE run_id = ?");
  service.bind(1, run_id);
  const Columns s(service);
  if (service.step()) {
    load.service_samples = s.int64("n");
    load.mean_service_ns = s.optional_real("mean");
  }
  Statement throughput(db,
                       "SELECT MAX(throughput_rps) AS x FROM tail_results "
                       "WHERE run_id = ? AND type_id IS NULL");
  throughput.bind(1, run_id);
  const Columns t(throughput);
  if (throughput.step()) load.throughput_rps = t.optional_real("x");
  return load;
}

std::vector<MemlatSample> run_memlat(Database& db, std::int64_t run_id) {
  Statement st(db,
               "SELECT run_id, t_ns, interval_ns, latency_ns, frequency_ghz, cycles, ref_cycles, "
               "outstanding, requests, target, rpq_occupancy, rpq_inserts, imc_clockticks, "
               "imc_latency_ns FROM memlat WHERE run_id = ? ORDER BY t_ns, id");
  st.bind(1, run_id);
  return read_rows(st, [](const Columns& c) {
    MemlatSample m;
    m.run_id = c.int64("run_id");
    m.t_ns = c.int64("t_ns");
    m.interval_ns = c.int64("interval_ns");
    m.latency_ns = c.optional_real("latency_ns");
    m.frequency_ghz = c.optional_real("frequency_ghz");
    m.cycles = c.real("cycles");
    m.ref_cycles = c.real("ref_cycles");
    m.outstanding = c.real("outstanding");
    m.requests = c.real("requests");
    m.target = c.text("target");
    m.rpq_occupancy = c.optional_real("rpq_occupancy");
    m.rpq_inserts = c.optional_real("rpq_inserts");
    m.imc_clockticks = c.optional_real("imc_clockticks");
    m.imc_latency_ns = c.optional_real("imc_latency_ns");
    return m;
  });
}

std::vector<MemlatProbePoint> run_memlat_probe(Database& db, std::int64_t run_id) {
  Statement st(db,
               "SELECT run_id, buffer_bytes, load_threads, latency_ns, huge_pages "
               "FROM memlat_probe WHERE run_id = ? ORDER BY id");
  st.bind(1, run_id);
  return read_rows(st, [](const Columns& c) {
    MemlatProbePoint p;
    p.run_id = c.int64("run_id");
    p.buffer_bytes = c.int64("buffer_bytes");
    p.load_threads = static_cast<int>(c.int64("load_threads"));
    p.latency_ns = c.real("latency_ns");
    p.huge_pages = c.int64("huge_pages") != 0;
    return p;
  });
}

std::vector<AccelResult> run_accel_results(Database& db, std::int64_t run_id) {
  Statement st(db,
               "SELECT run_id, kernel, strategy, design, cycles, alpha, accel_factor, "
               "offloads_per_s, o0, l_cycles, q_cycles, o1, cycles_per_byte, beta, speedup, "
               "latency_reduction, min_bytes_speedup, min_bytes_latency "
               "FROM accel_results WHERE run_id = ? ORDER BY id");
  st.bind(1, run_id);
  return read_rows(st, [](const Columns& c) {
    AccelResult r;
    r.run_id = c.int64("run_id");
    r.kernel = c.optional_text("kernel");
    r.strategy = c.text("strategy");
    r.design = c.text("design");
    r.cycles = c.real("cycles");
    r.alpha = c.real("alpha");
    r.accel_factor = c.optional_real("accel_factor");
    r.offloads_per_s = c.real("offloads_per_s");
    r.o0 = c.real("o0");
    r.l_cycles = c.real("l_cycles");
    r.q_cycles = c.real("q_cycles");
    r.o1 = c.real("o1");
    r.cycles_per_byte = c.optional_real("cycles_per_byte");
    r.beta = c.optional_real("beta");
    r.speedup = c.real("speedup");
    r.latency_reduction = c.optional_real("latency_reduction");
    r.min_bytes_speedup = c.optional_real("min_bytes_speedup");
    r.min_bytes_latency = c.optional_real("min_bytes_latency");
    return r;
  });
}

std::vector<AccelProjectionRow> run_accel_projections(Database& db, std::int64_t run_id) {
  Statement st(db,
               "SELECT p.run_id, p.gradient_run_id, p.link, p.type_id, tt.name AS type, "
               "p.added_delay_ns, p.baseline_ns, p.predicted_ns, p.ci_low_ns, p.ci_high_ns, "
               "p.confidence, p.missing FROM accel_projections p "
               "JOIN transaction_types tt ON tt.id = p.type_id WHERE p.run_id = ? ORDER BY p.id");
  st.bind(1, run_id);
  return read_rows(st, [](const Columns& c) {
    AccelProjectionRow row;
    row.type = c.text("type");
    AccelProjection& p = row.projection;
    p.run_id = c.int64("run_id");
    p.gradient_run_id = c.optional_int64("gradient_run_id");
    p.link = c.text("link");
    p.type_id = c.int64("type_id");
    p.added_delay_ns = c.real("added_delay_ns");
    p.baseline_ns = c.optional_real("baseline_ns");
    p.predicted_ns = c.optional_real("predicted_ns");
    p.ci_low_ns = c.optional_real("ci_low_ns");
    p.ci_high_ns = c.optional_real("ci_high_ns");
    p.confidence = c.real("confidence");
    p.missing = c.optional_text("missing");
    return row;
  });
}

namespace {

std::vector<ExperimentCheck> experiment_checks(Database& db, std::int64_t experiment_id) {
  Statement st(db,
               "SELECT experiment_id, window, term, bound, value, ci_low, ci_high, verdict, "
               "extra_ns, note, samples, scheduled FROM experiment_checks "
               "WHERE experiment_id = ? ORDER BY CASE window WHEN 'baseline' THEN 0 "
               "WHEN 'fault' THEN 1 ELSE 2 END, id");
  st.bind(1, experiment_id);
  const Columns c(st);
  std::vector<ExperimentCheck> rows;
  while (st.step()) {
    ExperimentCheck x;
    x.experiment_id = c.int64("experiment_id");
    x.window = c.text("window");
    x.term = c.text("term");
    x.bound = c.real("bound");
    x.value = c.real("value");
    x.ci_low = c.optional_real("ci_low");
    x.ci_high = c.optional_real("ci_high");
    x.verdict = c.text("verdict");
    x.extra_ns = c.optional_int64("extra_ns");
    x.note = c.optional_text("note");
    x.samples = c.int64("samples");
    x.scheduled = c.int64("scheduled");
    rows.push_back(std::move(x));
  }
  return rows;
}

}  // namespace

std::vector<ExperimentRow> run_experiments(Database& db, std::int64_t run_id) {
  Statement st(db,
               "SELECT id, run_id, name, spec, links, started_ns, fault_start_ns, fault_end_ns, "
               "ended_ns, verdict, mean_delay_ns, observed_change_ns, observed_ci_low_ns, "
               "observed_ci_high_ns, predicted_change_ns, predicted_ci_low_ns, "
               "predicted_ci_high_ns FROM experiments WHERE run_id = ? ORDER BY id");
  st.bind(1, run_id);
  const Columns c(st);
  std::vector<ExperimentRow> rows;
  while (st.step()) {
    ExperimentRow r;
    r.id = c.int64("id");
    Experiment& e = r.experiment;
    e.run_id = c.int64("run_id");
    e.name = c.text("name");
    e.spec_json = c.text("spec");
    e.links_json = c.text("links");
    e.started_ns = c.int64("started_ns");
    e.fault_start_ns = c.int64("fault_start_ns");
    e.fault_end_ns = c.int64("fault_end_ns");
    e.ended_ns = c.int64("ended_ns");
    e.verdict = c.text("verdict");
    e.mean_delay_ns = c.optional_real("mean_delay_ns");
    e.observed_change_ns = c.optional_real("observed_change_ns");
    e.observed_ci_low_ns = c.optional_real("observed_ci_low_ns");
    e.observed_ci_high_ns = c.optional_real("observed_ci_high_ns");
    e.predicted_change_ns = c.optional_real("predicted_change_ns");
    e.predicted_ci_low_ns = c.optional_real("predicted_ci_low_ns");
    e.predicted_ci_high_ns = c.optional_real("predicted_ci_high_ns");
    rows.push_back(std::move(r));
  }
  for (ExperimentRow& r : rows) r.checks = experiment_checks(db, r.id);
  return rows;
}

std::map<std::int64_t, std::string> transaction_type_names(Database& db) {
  Statement st(db, "SELECT id, name FROM transaction_types");
  const Columns c(st);
  std::map<std::int64_t, std::string> names;
  while (st.step()) names.emplace(c.int64("id"), c.text("name"));
  return names;
}

std::map<std::string, std::vector<std::int64_t>> latencies_by_type(
    Database& db, std::int64_t run_id, std::optional<PhaseKind> phase_kind) {
  Statement st(db, phase_kind ? "SELECT tt.name AS type, s.latency_ns AS latency_ns "
                                "FROM samples s JOIN transaction_types tt ON tt.id = s.type_id "
                                "JOIN phases p ON p.id = s.phase_id "
                                "WHERE s.run_id = ? AND p.kind = ? ORDER BY s.send_ns, s.rowid"
                              : "SELECT tt.name AS type, s.latency_ns AS latency_ns "
                                "FROM samples s JOIN transaction_types tt ON tt.id = s.type_id "
                                "WHERE s.run_id = ? ORDER BY s.send_ns, s.rowid");
  st.bind(1, run_id);
  if (phase_kind) st.bind(2, to_string(*phase_kind));
  const Columns c(st);
  std::map<std::string, std::vector<std::int64_t>> latencies;
  while (st.step()) latencies[c.text("type")].push_back(c.int64("latency_ns"));
  return latencies;
}

std::vector<Sample> phase_samples(Database& db, std::int64_t phase_id) {
  Statement st(db,
               "SELECT phase_id, send_ns, latency_ns, service_ns, type_id, ts_source FROM samples "
               "WHERE phase_id = ? ORDER BY send_ns, rowid");
  st.bind(1, phase_id);
  return read_rows(st, [](const Columns& c) {
    Sample s;
    s.phase_id = c.optional_int64("phase_id");
    s.send_ns = c.int64("send_ns");
    s.latency_ns = c.int64("latency_ns");
    s.service_ns = c.optional_int64("service_ns");
    s.type_id = c.int64("type_id");
    s.source = static_cast<TimestampSource>(c.int64("ts_source"));
    return s;
  });
}

}  // namespace nabla::db
