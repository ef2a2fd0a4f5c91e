// Variables by name and version per trace.
// params: -
// returns: -
CREATE INDEX variable_name IF NOT EXISTS FOR (n:Variable) ON (n.trace_id, n.name, n.version)
