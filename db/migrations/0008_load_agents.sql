-- `nabla load --agent`: what each load agent did at each rate point, over
-- every round of it (loadgen/rounds.hh, AgentSummary). Runs measured by one
-- local engine, and runs stored before this version, have none.
CREATE TABLE load_agents (
  id               INTEGER PRIMARY KEY,
  run_id           INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  rate_rps         REAL    NOT NULL CHECK (rate_rps > 0),  -- the rate point's target rate
  agent            TEXT    NOT NULL,                       -- host:port as named
  kind             TEXT    NOT NULL CHECK (kind IN ('symmetric', 'throughput', 'latency')),
  share_rps        REAL    NOT NULL CHECK (share_rps >= 0),  -- its share of the target rate
  rounds           INTEGER NOT NULL CHECK (rounds >= 0),
  rounds_failed    INTEGER NOT NULL CHECK (rounds_failed >= 0),  -- its own checks failed
  sent             INTEGER NOT NULL CHECK (sent >= 0),
  completed        INTEGER NOT NULL CHECK (completed >= 0),
  late             INTEGER NOT NULL CHECK (late >= 0),       -- its own timer lateness over the threshold
  errors           INTEGER NOT NULL CHECK (errors >= 0),
  samples          INTEGER NOT NULL CHECK (samples >= 0),    -- latency samples it returned
  timer_lateness_p99_ns INTEGER CHECK (timer_lateness_p99_ns IS NULL OR timer_lateness_p99_ns >= 0),
  reasons          TEXT    NOT NULL DEFAULT '[]'             -- JSON array: its last failed round's
) STRICT;
CREATE INDEX load_agents_by_run ON load_agents(run_id);
