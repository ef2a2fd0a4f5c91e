// Failed cases per trace.
// params: -
// returns: -
CREATE INDEX case_failed IF NOT EXISTS FOR (n:Case) ON (n.trace_id, n.failed)
