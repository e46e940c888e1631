-- Fault experiments of a campaign ([[experiment]] in the campaign file): one
-- row per experiment with its fault, its windows, the overall verdict and,
-- for a delay fault in a run that also measured gradients, the response-time
-- change the gradients predict beside the one observed; one row per SLO term
-- and window with the estimate, its CI and the verdict.
CREATE TABLE experiments (
  id                 INTEGER PRIMARY KEY,
  run_id             INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  name               TEXT    NOT NULL,
  spec               TEXT    NOT NULL CHECK (json_valid(spec)),  -- links, fault, windows, SLO
  links              TEXT    NOT NULL CHECK (json_valid(links)), -- the labels injected
  started_ns         INTEGER NOT NULL,                           -- baseline window start
  fault_start_ns     INTEGER NOT NULL,
  fault_end_ns       INTEGER NOT NULL,
  ended_ns           INTEGER NOT NULL,                           -- recovery window end
  verdict            TEXT    NOT NULL CHECK (verdict IN ('pass', 'fail', 'inconclusive')),
  mean_delay_ns      REAL,   -- the delay the injectors actually added, per packet
  observed_change_ns REAL,   -- fault-window mean minus baseline-window mean
  observed_ci_low_ns REAL,
  observed_ci_high_ns REAL,
  predicted_change_ns REAL,  -- sum over links of gradient x mean delay; NULL without gradients
  predicted_ci_low_ns REAL,
  predicted_ci_high_ns REAL,
  UNIQUE (run_id, name)
) STRICT;

CREATE TABLE experiment_checks (
  id             INTEGER PRIMARY KEY,
  experiment_id  INTEGER NOT NULL REFERENCES experiments(id) ON DELETE CASCADE,
  window         TEXT    NOT NULL CHECK (window IN ('baseline', 'fault', 'recovery')),
  term           TEXT    NOT NULL,  -- p50 p90 p99 p999 errors throughput
  bound          REAL    NOT NULL,  -- ns for percentiles, a share for errors, a change for throughput
  value          REAL    NOT NULL,
  ci_low         REAL,
  ci_high        REAL,
  verdict        TEXT    NOT NULL CHECK (verdict IN ('pass', 'fail', 'inconclusive')),
  extra_ns       INTEGER CHECK (extra_ns >= 0),  -- inconclusive: the longer window that would decide it
  note           TEXT,
  samples        INTEGER NOT NULL CHECK (samples >= 0),    -- answered requests in the window
  scheduled      INTEGER NOT NULL CHECK (scheduled >= 0)   -- sends scheduled in the window
) STRICT;
CREATE INDEX experiment_checks_by_experiment ON experiment_checks(experiment_id);
