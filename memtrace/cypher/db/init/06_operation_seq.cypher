// Operations in execution order per trace.
// params: -
// returns: -
CREATE INDEX operation_seq IF NOT EXISTS FOR (n:Operation) ON (n.trace_id, n.seq)
