// Variables by category per trace.
// params: -
// returns: -
CREATE INDEX variable_category IF NOT EXISTS FOR (n:Variable) ON (n.trace_id, n.category)
