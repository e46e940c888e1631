-- nabla run history, schema version 1.
--
-- This file is public API (documented in docs/schema.md) and is compiled into
-- the nabla binaries; it is applied once, as migration 0 -> 1, to an empty
-- database. Later changes go in db/migrations/NNNN_<what>.sql, never here.
--
-- Conventions: every table is STRICT (a wrong type is an error, not a silent
-- conversion); times are integer nanoseconds, `*_ns` wall-clock (Unix epoch)
-- for when something happened and plain durations otherwise; JSON columns are
-- checked with json_valid(); ids are INTEGER PRIMARY KEY (rowid aliases).
-- Deleting a run deletes everything recorded for it (ON DELETE CASCADE).

CREATE TABLE campaigns (
  id          INTEGER PRIMARY KEY,
  name        TEXT    NOT NULL CHECK (name <> ''),
  spec        TEXT    NOT NULL DEFAULT '{}' CHECK (json_valid(spec)),  -- campaign spec as JSON
  created_ns  INTEGER NOT NULL
) STRICT;

CREATE TABLE runs (
  id            INTEGER PRIMARY KEY,
  campaign_id   INTEGER REFERENCES campaigns(id) ON DELETE CASCADE,  -- NULL for ad-hoc runs
  kind          TEXT    NOT NULL CHECK (kind IN ('run', 'load', 'demo', 'analyze', 'inject')),
  status        TEXT    NOT NULL DEFAULT 'running'
                        CHECK (status IN ('running', 'complete', 'failed')),
  config        TEXT    NOT NULL DEFAULT '{}' CHECK (json_valid(config)),
  host_info     TEXT    NOT NULL DEFAULT '{}' CHECK (json_valid(host_info)),
  tool_version  TEXT    NOT NULL,
  seed          INTEGER,                      -- the run's master seed, for replay
  started_ns    INTEGER NOT NULL,
  ended_ns      INTEGER CHECK (ended_ns IS NULL OR ended_ns >= started_ns),
  error         TEXT,
  -- Owner of a 'running' row. A run whose owner is gone (pid dead, pid reused
  -- by another process, or another boot) is marked 'failed' on the next open.
  pid              INTEGER NOT NULL,
  pid_start_ticks  INTEGER NOT NULL,          -- /proc/<pid>/stat field 22
  boot_id          TEXT    NOT NULL,          -- /proc/sys/kernel/random/boot_id
  CHECK ((status = 'running') = (ended_ns IS NULL)),
  CHECK (status <> 'failed' OR error IS NOT NULL)
) STRICT;
CREATE INDEX runs_by_campaign ON runs(campaign_id);
CREATE INDEX runs_by_status ON runs(status);

-- Hosts taking part in a run.
CREATE TABLE nodes (
  id            INTEGER PRIMARY KEY,
  run_id        INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  name          TEXT    NOT NULL CHECK (name <> ''),
  address       TEXT,
  injectd_addr  TEXT,
  sniffd_addr   TEXT,
  UNIQUE (run_id, name)
) STRICT;

-- One-way logical links <proto, src host, src process, src port|0,
-- dst host, dst process, dst port|0> (ephemeral ports folded to 0).
CREATE TABLE links (
  id        INTEGER PRIMARY KEY,
  run_id    INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  proto     TEXT    NOT NULL CHECK (proto IN ('tcp', 'udp', 'any')),
  src_host  TEXT    NOT NULL,
  src_pid   INTEGER,
  src_comm  TEXT,
  src_port  INTEGER NOT NULL DEFAULT 0 CHECK (src_port BETWEEN 0 AND 65535),
  dst_host  TEXT    NOT NULL,
  dst_pid   INTEGER,
  dst_comm  TEXT,
  dst_port  INTEGER NOT NULL DEFAULT 0 CHECK (dst_port BETWEEN 0 AND 65535),
  -- e.g. "tcp web/nginx:0 -> app/tier:8080"; stable across runs, so it
  -- identifies "the same link" in history queries.
  label     TEXT GENERATED ALWAYS AS (
              proto || ' ' || src_host || coalesce('/' || src_comm, '') || ':' || src_port ||
              ' -> ' || dst_host || coalesce('/' || dst_comm, '') || ':' || dst_port) VIRTUAL,
  UNIQUE (run_id, proto, src_host, src_comm, src_port, dst_host, dst_comm, dst_port)
) STRICT;

-- Flow records from the sniffers, one per (node, 5-tuple) per run.
CREATE TABLE flows (
  id             INTEGER PRIMARY KEY,
  run_id         INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  node_id        INTEGER REFERENCES nodes(id) ON DELETE CASCADE,
  link_id        INTEGER REFERENCES links(id) ON DELETE SET NULL,  -- set once joined
  proto          TEXT    NOT NULL CHECK (proto IN ('tcp', 'udp')),
  local_addr     TEXT    NOT NULL,
  local_port     INTEGER NOT NULL CHECK (local_port BETWEEN 0 AND 65535),
  remote_addr    TEXT    NOT NULL,
  remote_port    INTEGER NOT NULL CHECK (remote_port BETWEEN 0 AND 65535),
  pid            INTEGER,
  comm           TEXT,
  direction      TEXT    NOT NULL CHECK (direction IN ('out', 'in')),
  segs_out       INTEGER NOT NULL DEFAULT 0 CHECK (segs_out >= 0),
  segs_in        INTEGER NOT NULL DEFAULT 0 CHECK (segs_in >= 0),
  bytes_out      INTEGER NOT NULL DEFAULT 0 CHECK (bytes_out >= 0),
  bytes_in       INTEGER NOT NULL DEFAULT 0 CHECK (bytes_in >= 0),
  first_seen_ns  INTEGER NOT NULL,
  last_seen_ns   INTEGER NOT NULL CHECK (last_seen_ns >= first_seen_ns)
) STRICT;
CREATE INDEX flows_by_run ON flows(run_id);

-- Phases of a gradient campaign (paper section 3) and of load measurements.
CREATE TABLE phases (
  id            INTEGER PRIMARY KEY,
  run_id        INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  kind          TEXT    NOT NULL CHECK (kind IN ('training', 'adaptive', 'active', 'baseline')),
  link_id       INTEGER REFERENCES links(id) ON DELETE CASCADE,  -- NULL for training/baseline
  started_ns    INTEGER NOT NULL,
  ended_ns      INTEGER CHECK (ended_ns IS NULL OR ended_ns >= started_ns),
  bin_width_ns  INTEGER CHECK (bin_width_ns > 0),
  bins          INTEGER CHECK (bins > 0),          -- N
  chunks        INTEGER CHECK (chunks > 0),        -- M (training)
  k_d           INTEGER CHECK (k_d > 0),           -- injection cycles in N bins
  amplitude_ns  INTEGER CHECK (amplitude_ns >= 0), -- requested square-wave amplitude
  CHECK (kind IN ('training', 'baseline') OR link_id IS NOT NULL)
) STRICT;
CREATE INDEX phases_by_run ON phases(run_id);

-- One injection on one link: what was asked for and what the injector
-- reports it actually did (release minus arrival, CLOCK_MONOTONIC).
CREATE TABLE injections (
  id                 INTEGER PRIMARY KEY,
  run_id             INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  phase_id           INTEGER REFERENCES phases(id) ON DELETE CASCADE,
  link_id            INTEGER REFERENCES links(id) ON DELETE CASCADE,
  node               TEXT,                           -- injector host
  waveform           TEXT    NOT NULL CHECK (waveform IN ('constant', 'square', 'off')),
  spec               TEXT    NOT NULL DEFAULT '{}' CHECK (json_valid(spec)),  -- faults etc.
  requested_delay_ns INTEGER NOT NULL CHECK (requested_delay_ns >= 0),
  period_ns          INTEGER CHECK (period_ns > 0),
  duty               REAL    CHECK (duty > 0 AND duty < 1),
  seed               INTEGER,
  started_ns         INTEGER NOT NULL,
  ended_ns           INTEGER CHECK (ended_ns IS NULL OR ended_ns >= started_ns),
  packets            INTEGER NOT NULL DEFAULT 0 CHECK (packets >= 0),
  bytes              INTEGER NOT NULL DEFAULT 0 CHECK (bytes >= 0),
  delayed            INTEGER NOT NULL DEFAULT 0 CHECK (delayed >= 0),
  dropped            INTEGER NOT NULL DEFAULT 0 CHECK (dropped >= 0),
  actual_mean_ns     REAL,   -- over the delayed (high) half-cycles
  actual_std_ns      REAL    CHECK (actual_std_ns >= 0),
  actual_p50_ns      REAL,
  actual_p99_ns      REAL,
  actual_max_ns      REAL
) STRICT;
CREATE INDEX injections_by_run ON injections(run_id);

-- Transaction types (HTTP URL, memcache get/set, ...) are stored once and
-- referenced by id, which keeps `samples` narrow.
CREATE TABLE transaction_types (
  id    INTEGER PRIMARY KEY,
  name  TEXT NOT NULL UNIQUE
) STRICT;

CREATE TABLE timestamp_sources (
  id    INTEGER PRIMARY KEY,
  name  TEXT NOT NULL UNIQUE
) STRICT;
INSERT INTO timestamp_sources (id, name) VALUES (0, 'user'), (1, 'software'), (2, 'hardware');

-- The big table: one row per request. Kept narrow on purpose.
CREATE TABLE samples (
  run_id      INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  phase_id    INTEGER REFERENCES phases(id) ON DELETE CASCADE,
  send_ns     INTEGER NOT NULL,               -- intended send time (wall clock)
  latency_ns  INTEGER NOT NULL CHECK (latency_ns >= 0),  -- sojourn, from intended send
  service_ns  INTEGER,                        -- server-reported service time, if any
  type_id     INTEGER NOT NULL REFERENCES transaction_types(id),
  ts_source   INTEGER NOT NULL REFERENCES timestamp_sources(id)
) STRICT;
CREATE INDEX samples_by_run ON samples(run_id, send_ns);
CREATE INDEX samples_by_phase ON samples(phase_id) WHERE phase_id IS NOT NULL;

-- Gradient of one transaction type's mean response time with respect to one
-- link's one-way latency (dimensionless: ns of response per ns of delay).
CREATE TABLE gradients (
  id                   INTEGER PRIMARY KEY,
  run_id               INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  link_id              INTEGER NOT NULL REFERENCES links(id) ON DELETE CASCADE,
  type_id              INTEGER NOT NULL REFERENCES transaction_types(id),
  phase_id             INTEGER REFERENCES phases(id) ON DELETE SET NULL,  -- the active phase
  value                REAL    NOT NULL,
  ci_low               REAL,
  ci_high              REAL,
  confidence           REAL    NOT NULL DEFAULT 0.95 CHECK (confidence > 0 AND confidence < 1),
  time_domain          REAL,   -- cross-check: high half-cycle mean minus low, over delta-l
  actual_amplitude_ns  REAL    CHECK (actual_amplitude_ns >= 0),  -- mean delay actually added
  perturbation_ns      REAL,   -- response-time perturbation during measurement
  throughput_change    REAL,   -- relative, e.g. -0.01 = 1% fewer requests/s
  k_d                  INTEGER CHECK (k_d > 0),
  bins                 INTEGER CHECK (bins > 0),
  CHECK (ci_low IS NULL OR ci_high IS NULL OR ci_low <= ci_high),
  UNIQUE (run_id, link_id, type_id)
) STRICT;

-- Tail-latency results of `nabla load`: one row per (rate, type, metric,
-- percentile). verdict 'n/a' means the statistics forbade reporting a value;
-- `reasons` then says why (JSON array of strings).
CREATE TABLE tail_results (
  id              INTEGER PRIMARY KEY,
  run_id          INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  type_id         INTEGER REFERENCES transaction_types(id),  -- NULL = all types
  metric          TEXT    NOT NULL DEFAULT 'sojourn' CHECK (metric IN ('sojourn', 'service')),
  rate_rps        REAL    NOT NULL CHECK (rate_rps > 0),     -- target rate
  throughput_rps  REAL    CHECK (throughput_rps >= 0),       -- achieved
  percentile      REAL    NOT NULL CHECK (percentile > 0 AND percentile < 100),
  value_ns        REAL,
  ci_low_ns       REAL,
  ci_high_ns      REAL,
  confidence      REAL    NOT NULL DEFAULT 0.95 CHECK (confidence > 0 AND confidence < 1),
  verdict         TEXT    NOT NULL CHECK (verdict IN ('ok', 'n/a')),
  reasons         TEXT    NOT NULL DEFAULT '[]'
                          CHECK (json_valid(reasons) AND json_type(reasons) = 'array'),
  samples         INTEGER CHECK (samples >= 0),
  late_sends      INTEGER CHECK (late_sends >= 0),
  ts_source       INTEGER REFERENCES timestamp_sources(id),
  CHECK (verdict = 'n/a' OR value_ns IS NOT NULL),
  CHECK (ci_low_ns IS NULL OR ci_high_ns IS NULL OR ci_low_ns <= ci_high_ns)
) STRICT;
CREATE INDEX tail_results_by_run ON tail_results(run_id);
CREATE INDEX gradients_by_link ON gradients(link_id);

-- ------------------------------------------------------------------ views

-- One line per run: what it was, how it ended, how much it recorded.
CREATE VIEW run_summary AS
SELECT r.id                                          AS run_id,
       c.name                                        AS campaign,
       r.kind                                        AS kind,
       r.status                                      AS status,
       strftime('%Y-%m-%dT%H:%M:%SZ', r.started_ns / 1000000000, 'unixepoch') AS started,
       (r.ended_ns - r.started_ns) / 1e9             AS duration_s,
       (SELECT count(*) FROM links l WHERE l.run_id = r.id)        AS links,
       (SELECT count(*) FROM samples s WHERE s.run_id = r.id)      AS samples,
       (SELECT count(*) FROM gradients g WHERE g.run_id = r.id)    AS gradients,
       (SELECT count(*) FROM tail_results t WHERE t.run_id = r.id) AS tail_results,
       r.error                                       AS error
FROM runs r LEFT JOIN campaigns c ON c.id = r.campaign_id;

-- For every link (by label) and transaction type: the gradient from the most
-- recent complete run that measured it.
CREATE VIEW latest_gradients AS
SELECT link, type, gradient, ci_low, ci_high, actual_amplitude_ns, run_id, started
FROM (
  SELECT l.label  AS link,
         tt.name  AS type,
         g.value  AS gradient,
         g.ci_low AS ci_low,
         g.ci_high AS ci_high,
         g.actual_amplitude_ns AS actual_amplitude_ns,
         r.id     AS run_id,
         strftime('%Y-%m-%dT%H:%M:%SZ', r.started_ns / 1000000000, 'unixepoch') AS started,
         row_number() OVER (PARTITION BY l.label, tt.name
                            ORDER BY r.started_ns DESC, r.id DESC) AS recency
  FROM gradients g
  JOIN runs r ON r.id = g.run_id AND r.status = 'complete'
  JOIN links l ON l.id = g.link_id
  JOIN transaction_types tt ON tt.id = g.type_id
)
WHERE recency = 1;

-- Tail results of complete runs in time order, for trend plots:
-- SELECT * FROM tail_over_time WHERE percentile = 99 AND type = '*'.
CREATE VIEW tail_over_time AS
SELECT r.id            AS run_id,
       strftime('%Y-%m-%dT%H:%M:%SZ', r.started_ns / 1000000000, 'unixepoch') AS started,
       r.started_ns    AS started_ns,
       coalesce(tt.name, '*') AS type,
       t.metric        AS metric,
       t.rate_rps      AS rate_rps,
       t.throughput_rps AS throughput_rps,
       t.percentile    AS percentile,
       t.value_ns      AS value_ns,
       t.ci_low_ns     AS ci_low_ns,
       t.ci_high_ns    AS ci_high_ns,
       t.verdict       AS verdict,
       t.reasons       AS reasons
FROM tail_results t
JOIN runs r ON r.id = t.run_id AND r.status = 'complete'
LEFT JOIN transaction_types tt ON tt.id = t.type_id
ORDER BY r.started_ns, r.id, t.rate_rps, type, t.metric, t.percentile;
