-- `nabla accel` and `nabla memlat` store their results as runs of their own:
-- the model's rows and the link projection, the probe's points, and the
-- memory-controller (uncore iMC) counters beside the core ones.

-- runs: the kinds 'accel' and 'memlat'. A CHECK cannot be altered, so the
-- table is rebuilt (migrations run with foreign keys off and checked before
-- commit). The views that read runs are left as they are: the legacy rename
-- does not re-resolve them, and they name the table, which exists again
-- once renamed.
CREATE TABLE runs_new (
  id            INTEGER PRIMARY KEY,
  campaign_id   INTEGER REFERENCES campaigns(id) ON DELETE CASCADE,
  kind          TEXT    NOT NULL CHECK (kind IN ('run', 'load', 'demo', 'analyze', 'inject',
                                                 'accel', 'memlat')),
  status        TEXT    NOT NULL DEFAULT 'running'
                        CHECK (status IN ('running', 'complete', 'failed')),
  config        TEXT    NOT NULL DEFAULT '{}' CHECK (json_valid(config)),
  host_info     TEXT    NOT NULL DEFAULT '{}' CHECK (json_valid(host_info)),
  tool_version  TEXT    NOT NULL,
  seed          INTEGER,
  started_ns    INTEGER NOT NULL,
  ended_ns      INTEGER CHECK (ended_ns IS NULL OR ended_ns >= started_ns),
  error         TEXT,
  pid              INTEGER NOT NULL,
  pid_start_ticks  INTEGER NOT NULL,
  boot_id          TEXT    NOT NULL,
  CHECK ((status = 'running') = (ended_ns IS NULL)),
  CHECK (status <> 'failed' OR error IS NOT NULL)
) STRICT;
INSERT INTO runs_new SELECT * FROM runs;
DROP TABLE runs;
PRAGMA legacy_alter_table = ON;
ALTER TABLE runs_new RENAME TO runs;
PRAGMA legacy_alter_table = OFF;
CREATE INDEX runs_by_campaign ON runs(campaign_id);
CREATE INDEX runs_by_status ON runs(status);

-- One row per design and strategy `nabla accel` evaluated (per kernel with
-- --config): the model's inputs, as it used them, and its outputs. All
-- overheads are host cycles.
CREATE TABLE accel_results (
  id                 INTEGER PRIMARY KEY,
  run_id             INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  kernel             TEXT,                                  -- NULL: from flags, not --config
  strategy           TEXT    NOT NULL CHECK (strategy IN ('on-chip', 'off-chip', 'remote')),
  design             TEXT    NOT NULL
                             CHECK (design IN ('sync', 'sync-os', 'async', 'async-distinct')),
  cycles             REAL    NOT NULL CHECK (cycles > 0),   -- C, cycles in one second
  alpha              REAL    NOT NULL CHECK (alpha >= 0 AND alpha <= 1),
  accel_factor       REAL    CHECK (accel_factor > 0),      -- A; NULL: not given
  offloads_per_s     REAL    NOT NULL CHECK (offloads_per_s >= 0),
  o0                 REAL    NOT NULL CHECK (o0 >= 0),
  l_cycles           REAL    NOT NULL CHECK (l_cycles >= 0),  -- L
  q_cycles           REAL    NOT NULL CHECK (q_cycles >= 0),  -- Q
  o1                 REAL    NOT NULL CHECK (o1 >= 0),
  cycles_per_byte    REAL    CHECK (cycles_per_byte > 0),   -- C_b; NULL: sizes not asked
  beta               REAL    CHECK (beta > 0),
  speedup            REAL    NOT NULL CHECK (speedup > 0),  -- C / C_S
  latency_reduction  REAL    CHECK (latency_reduction > 0), -- C / C_L; NULL without A
  -- Smallest offload in bytes from which every larger one pays off; NULL
  -- with cycles_per_byte set means never.
  min_bytes_speedup  REAL    CHECK (min_bytes_speedup >= 0),
  min_bytes_latency  REAL    CHECK (min_bytes_latency >= 0)
) STRICT;
CREATE INDEX accel_results_by_run ON accel_results(run_id);

-- `nabla accel --strategy remote --link`: per transaction type, what the
-- link's gradient (from gradient_run_id) projects for the mean response
-- time when each request puts added_delay_ns more on the link.
CREATE TABLE accel_projections (
  id               INTEGER PRIMARY KEY,
  run_id           INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  gradient_run_id  INTEGER REFERENCES runs(id) ON DELETE SET NULL,
  link             TEXT    NOT NULL CHECK (link <> ''),      -- the --link selector
  type_id          INTEGER NOT NULL REFERENCES transaction_types(id),
  added_delay_ns   REAL    NOT NULL,
  baseline_ns      REAL,
  predicted_ns     REAL,                                      -- NULL: see missing
  ci_low_ns        REAL,
  ci_high_ns       REAL,
  confidence       REAL    NOT NULL CHECK (confidence > 0 AND confidence < 1),
  missing          TEXT,                                      -- why there is no prediction
  CHECK (predicted_ns IS NOT NULL OR missing IS NOT NULL),
  CHECK (ci_low_ns IS NULL OR ci_high_ns IS NULL OR ci_low_ns <= ci_high_ns)
) STRICT;
CREATE INDEX accel_projections_by_run ON accel_projections(run_id);

-- `nabla memlat --probe`: one row per pointer-chase point.
CREATE TABLE memlat_probe (
  id            INTEGER PRIMARY KEY,
  run_id        INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  buffer_bytes  INTEGER NOT NULL CHECK (buffer_bytes > 0),
  load_threads  INTEGER NOT NULL CHECK (load_threads >= 0),
  latency_ns    REAL    NOT NULL CHECK (latency_ns > 0),     -- ns per dependent load
  huge_pages    INTEGER NOT NULL CHECK (huge_pages IN (0, 1))
) STRICT;
CREATE INDEX memlat_probe_by_run ON memlat_probe(run_id);

-- memlat: the memory controllers' counters of the interval, summed over
-- every uncore iMC channel (clockticks: the mean per channel), and the
-- controller-side latency from them. NULL where no uncore iMC PMU exists.
ALTER TABLE memlat ADD COLUMN rpq_occupancy REAL CHECK (rpq_occupancy >= 0);
ALTER TABLE memlat ADD COLUMN rpq_inserts REAL CHECK (rpq_inserts >= 0);
ALTER TABLE memlat ADD COLUMN imc_clockticks REAL CHECK (imc_clockticks >= 0);
ALTER TABLE memlat ADD COLUMN imc_latency_ns REAL CHECK (imc_latency_ns > 0);
