#pragma once
// Typed reads of the run history: one function per question the CLI
// (`nabla runs`, `nabla predict`), the demo and a report ask, each returning
// rows as structs with named fields. Outside db/ nothing reads a column by
// its position; the one raw passthrough is `nabla sql`, which runs the
// user's own SQL through db::query().
//
// The rows reuse the records the writers take (records.hh: Link, Phase,
// Gradient, TailResult, Sample) and add what a read joins in: the row's id,
// a link's generated label, a type's name, a phase's sample counts. NULLable
// columns are std::optional. Every function takes an open Database (a
// read-only one is enough) and returns its rows in the order it documents; a
// run id that does not exist yields no rows (or nullopt), never an error.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "nabla/db/records.hh"

namespace nabla::db {

class Database;

// ---------------------------------------------------------------- runs

// One line of the run_summary view: what a run was, how it ended, how much
// it recorded.
struct RunSummary {
  std::int64_t run_id = 0;
  std::optional<std::string> campaign;  // the campaign's name; nullopt for ad-hoc runs
  RunKind kind = RunKind::kRun;
  RunStatus status = RunStatus::kRunning;
  std::string started;               // UTC, "2023-11-14T22:13:20Z"
  std::optional<double> duration_s;  // nullopt while running
  std::int64_t links = 0, samples = 0, gradients = 0, tail_results = 0;
  std::optional<std::string> error;
};

// The newest runs first (highest id first); limit <= 0 means all.
std::vector<RunSummary> list_run_summaries(Database& db, int limit);
std::optional<RunSummary> find_run_summary(Database& db, std::int64_t run_id);

// The runs row itself (configuration, seed, owner).
std::optional<RunInfo> find_run(Database& db, std::int64_t run_id);
// Newest started first (ties: highest id first); limit <= 0 means all.
std::vector<RunInfo> list_runs(Database& db, int limit);
// The run of `kind` with the highest id that started at or after
// `started_since_ns` (how `nabla demo` finds the run its child stored).
std::optional<RunInfo> newest_run_of_kind(Database& db, RunKind kind,
                                          std::int64_t started_since_ns);

// The campaign row a run refers to (runs.campaign_id).
std::optional<Campaign> find_campaign(Database& db, std::int64_t campaign_id);

// ---------------------------------------------------------------- nodes

// A run's nodes by id.
std::vector<Node> run_nodes(Database& db, std::int64_t run_id);

// ---------------------------------------------------------------- links

struct LinkRow {
  std::int64_t id = 0;
  // links.label, with the processes: "tcp app/nabla-tier:0 -> db/nabla-tier:9003".
  std::string label;
  Link link;
};

// A run's links by id.
std::vector<LinkRow> run_links(Database& db, std::int64_t run_id);

// ---------------------------------------------------------------- phases

struct PhaseRow {
  std::int64_t id = 0;
  Phase phase;
  std::int64_t samples = 0;  // requests recorded in the phase
  // Intended send times of its first and last request; nullopt without any.
  std::optional<std::int64_t> first_send_ns, last_send_ns;
};

// A run's phases by id (repeated active phases of a link are separate rows).
std::vector<PhaseRow> run_phases(Database& db, std::int64_t run_id);

// ---------------------------------------------------------------- injections

struct InjectionRow {
  std::int64_t id = 0;
  std::optional<std::string> link_label;  // nullopt: an injection on no stored link
  Injection injection;
};

// A run's injections by id.
std::vector<InjectionRow> run_injections(Database& db, std::int64_t run_id);

// ---------------------------------------------------------------- gradients

struct GradientRow {
  std::int64_t id = 0;
  LinkRow link;
  std::string type;  // the transaction type's name
  Gradient gradient;
};

// A run's gradients, one per (link, type), ordered by link label, then type.
std::vector<GradientRow> run_gradients(Database& db, std::int64_t run_id);

// A sweep's gradients ([gradient] amplitudes) of a run: gradient row id ->
// its amplitudes in ascending requested amplitude. Runs without a sweep
// have none.
std::map<std::int64_t, std::vector<GradientAmplitude>> run_gradient_amplitudes(Database& db,
                                                                               std::int64_t run_id);

// ---------------------------------------------------------------- tail results

struct TailResultRow {
  std::int64_t id = 0;
  std::optional<std::string> type;  // nullopt: the result over all types
  TailResult result;
};

// A run's tail results ordered by rate, type (all types first), metric and
// percentile.
std::vector<TailResultRow> run_tail_results(Database& db, std::int64_t run_id);

// A run's controller checks (load_checks) by rate, then in the controller's
// order. Runs stored before schema version 7 have none.
std::vector<LoadCheck> run_load_checks(Database& db, std::int64_t run_id);

// A run's load agents (load_agents) by rate, then in the order named. Runs
// of one local engine, and runs stored before schema version 8, have none.
std::vector<LoadAgent> run_load_agents(Database& db, std::int64_t run_id);

// What a `nabla load` run measured of the server's work: the mean of the
// server-reported service times (X-Service-Time-Ns) over all its samples and
// the highest throughput it achieved over its rate points (all types). Both
// nullopt when the run stored none.
struct ServiceLoad {
  std::int64_t service_samples = 0;  // requests with a service time
  std::optional<double> mean_service_ns;
  std::optional<double> throughput_rps;
};

ServiceLoad run_service_load(Database& db, std::int64_t run_id);

// A run's memory-latency intervals (`nabla load --memlat`, `nabla memlat
// --db`) in time order.
std::vector<MemlatSample> run_memlat(Database& db, std::int64_t run_id);

// A run's pointer-chase points (`nabla memlat --probe --db`) in the order
// they were measured.
std::vector<MemlatProbePoint> run_memlat_probe(Database& db, std::int64_t run_id);

// ---------------------------------------------------------------- accel

// A run's model rows (`nabla accel --db`) in the order they were evaluated.
std::vector<AccelResult> run_accel_results(Database& db, std::int64_t run_id);

struct AccelProjectionRow {
  std::string type;  // the transaction type's name
  AccelProjection projection;
};

// A run's link-gradient projections in the order they were stored (by type).
std::vector<AccelProjectionRow> run_accel_projections(Database& db, std::int64_t run_id);
// ---------------------------------------------------------------- experiments

struct ExperimentRow {
  std::int64_t id = 0;
  Experiment experiment;
  std::vector<ExperimentCheck> checks;  // by window (baseline, fault, recovery), then as stored
};

// A run's fault experiments in the order they ran.
std::vector<ExperimentRow> run_experiments(Database& db, std::int64_t run_id);

// ---------------------------------------------------------------- samples

// Transaction type id -> name, every type in the database.
std::map<std::int64_t, std::string> transaction_type_names(Database& db);

// A run's response times (latency_ns) by type name, in send order within a
// type. With `phase_kind`, only the samples of phases of that kind (e.g. the
// training phase, the baseline of `nabla predict`); samples outside any phase
// are then left out.
std::map<std::string, std::vector<std::int64_t>> latencies_by_type(
    Database& db, std::int64_t run_id, std::optional<PhaseKind> phase_kind = std::nullopt);

// The samples of one phase in send order (ties by insertion order).
std::vector<Sample> phase_samples(Database& db, std::int64_t phase_id);

}  // namespace nabla::db
