// Attributions by run (eval, re-runs, deleting a run).
// params: -
// returns: -
CREATE INDEX attribution_run IF NOT EXISTS FOR (n:Attribution) ON (n.run_id)
