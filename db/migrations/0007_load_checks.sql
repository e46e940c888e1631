-- The self-correcting controller's checks of each rate point of `nabla load`
-- (loadgen/controller_checks.hh), so a report can say which held and by how
-- much: one row per (rate point, check), in the order the controller runs
-- them. Runs stored before this version have none.
CREATE TABLE load_checks (
  id         INTEGER PRIMARY KEY,
  run_id     INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  rate_rps   REAL    NOT NULL CHECK (rate_rps > 0),   -- the rate point's target rate
  position   INTEGER NOT NULL CHECK (position >= 0),  -- order within the rate point
  name       TEXT    NOT NULL,
  outcome    TEXT    NOT NULL CHECK (outcome IN ('pass', 'fail', 'not applied')),
  statistic  REAL,               -- what the check measured
  threshold  REAL,               -- the bound it was held to (alpha for a p-value)
  p_value    REAL CHECK (p_value IS NULL OR (p_value >= 0 AND p_value <= 1)),
  samples    INTEGER CHECK (samples >= 0),  -- how many values it was computed on
  detail     TEXT    NOT NULL DEFAULT ''
) STRICT;
CREATE INDEX load_checks_by_run ON load_checks(run_id);
