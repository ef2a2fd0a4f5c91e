// Variables in execution order per trace.
// params: -
// returns: -
CREATE INDEX variable_seq IF NOT EXISTS FOR (n:Variable) ON (n.trace_id, n.seq)
