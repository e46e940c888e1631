-- Link gradients measured all at once, at several amplitudes, and checked
-- by a step: the phase kinds they need and the figures they store.

-- phases: 'simultaneous' injects every measured link in one window (no
-- single link), 'step' holds a constant delay on one link (verification).
-- A CHECK cannot be altered, so the table is rebuilt (migrations run with
-- foreign keys off and checked before commit).
CREATE TABLE phases_new (
  id            INTEGER PRIMARY KEY,
  run_id        INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  kind          TEXT    NOT NULL CHECK (kind IN ('training', 'adaptive', 'active', 'baseline',
                                                 'simultaneous', 'step')),
  link_id       INTEGER REFERENCES links(id) ON DELETE CASCADE,
  started_ns    INTEGER NOT NULL,
  ended_ns      INTEGER CHECK (ended_ns IS NULL OR ended_ns >= started_ns),
  bin_width_ns  INTEGER CHECK (bin_width_ns > 0),
  bins          INTEGER CHECK (bins > 0),
  chunks        INTEGER CHECK (chunks > 0),
  k_d           INTEGER CHECK (k_d > 0),
  amplitude_ns  INTEGER CHECK (amplitude_ns >= 0),
  CHECK (kind IN ('training', 'baseline', 'simultaneous') OR link_id IS NOT NULL)
) STRICT;
INSERT INTO phases_new SELECT * FROM phases;
DROP TABLE phases;
ALTER TABLE phases_new RENAME TO phases;
CREATE INDEX phases_by_run ON phases(run_id);

-- gradients: how the link was scheduled; the step verification (finite
-- difference over a constant delay); the messages per transaction that
-- cross the link in the measuring window.
ALTER TABLE gradients ADD COLUMN schedule TEXT
  CHECK (schedule IS NULL OR schedule IN ('sequential', 'simultaneous'));
ALTER TABLE gradients ADD COLUMN step_value REAL;
ALTER TABLE gradients ADD COLUMN step_ci_low REAL;
ALTER TABLE gradients ADD COLUMN step_ci_high REAL;
ALTER TABLE gradients ADD COLUMN messages_per_txn REAL;
ALTER TABLE gradients ADD COLUMN messages_ci_low REAL;
ALTER TABLE gradients ADD COLUMN messages_ci_high REAL;

-- One gradient per amplitude of a sweep ([gradient] amplitudes), beside the
-- link's gradient row.
CREATE TABLE gradient_amplitudes (
  id                   INTEGER PRIMARY KEY,
  run_id               INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  gradient_id          INTEGER NOT NULL REFERENCES gradients(id) ON DELETE CASCADE,
  phase_id             INTEGER REFERENCES phases(id) ON DELETE SET NULL,
  amplitude_ns         INTEGER NOT NULL CHECK (amplitude_ns > 0),  -- requested
  actual_amplitude_ns  REAL    CHECK (actual_amplitude_ns >= 0),
  value                REAL    NOT NULL,
  ci_low               REAL,
  ci_high              REAL,
  CHECK (ci_low IS NULL OR ci_high IS NULL OR ci_low <= ci_high),
  UNIQUE (gradient_id, amplitude_ns)
) STRICT;
CREATE INDEX gradient_amplitudes_by_run ON gradient_amplitudes(run_id);
