// Create or update variables of a trace.
// params: $trace_id, $rows
// returns: -
UNWIND $rows AS row
MERGE (v:Variable {trace_id: $trace_id, id: row.id})
SET v += row.props
