-- tail_results.metric: 'response', what `nabla load` answers since this
-- version (the reply less the moment the client was ready to send: the
-- sojourn from the intended send without the client's own timer lateness).
-- 'sojourn' rows stay what they were, from the intended send. A CHECK cannot
-- be altered, so the table is rebuilt as 0005 rebuilt runs; the views that
-- read tail_results name the table, which exists again once renamed.
CREATE TABLE tail_results_new (
  id              INTEGER PRIMARY KEY,
  run_id          INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  type_id         INTEGER REFERENCES transaction_types(id),  -- NULL = all types
  metric          TEXT    NOT NULL DEFAULT 'sojourn'
                          CHECK (metric IN ('sojourn', 'service', 'response')),
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
INSERT INTO tail_results_new SELECT * FROM tail_results;
DROP TABLE tail_results;
PRAGMA legacy_alter_table = ON;
ALTER TABLE tail_results_new RENAME TO tail_results;
PRAGMA legacy_alter_table = OFF;
CREATE INDEX tail_results_by_run ON tail_results(run_id);
