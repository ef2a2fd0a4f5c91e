// Attributions by trace (deleting or re-loading a trace removes them).
// params: -
// returns: -
CREATE INDEX attribution_trace IF NOT EXISTS FOR (n:Attribution) ON (n.trace_id)
