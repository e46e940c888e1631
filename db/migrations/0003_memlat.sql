-- Memory latency sampled beside a run (`nabla load --memlat`): one row per
-- sampling interval, with the counter deltas the estimate came from, so a
-- query can put tail latency next to memory latency over time.
CREATE TABLE memlat (
  id             INTEGER PRIMARY KEY,
  run_id         INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  t_ns           INTEGER NOT NULL,                 -- wall clock at the interval's end
  interval_ns    INTEGER NOT NULL CHECK (interval_ns > 0),
  latency_ns     REAL    CHECK (latency_ns > 0),   -- NULL: no LLC-miss reads in the interval
  frequency_ghz  REAL    CHECK (frequency_ghz > 0),
  cycles         REAL    NOT NULL CHECK (cycles >= 0),
  ref_cycles     REAL    NOT NULL CHECK (ref_cycles >= 0),
  outstanding    REAL    NOT NULL CHECK (outstanding >= 0),
  requests       REAL    NOT NULL CHECK (requests >= 0),
  target         TEXT    NOT NULL                  -- "system", "pid 1234"
) STRICT;
CREATE INDEX memlat_by_run ON memlat(run_id, t_ns);
