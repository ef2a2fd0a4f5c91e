// Operations by kind per trace.
// params: -
// returns: -
CREATE INDEX operation_kind IF NOT EXISTS FOR (n:Operation) ON (n.trace_id, n.kind)
