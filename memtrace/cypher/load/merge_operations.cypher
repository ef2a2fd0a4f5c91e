// Create or update operations of a trace.
// params: $trace_id, $rows
// returns: -
UNWIND $rows AS row
MERGE (o:Operation {trace_id: $trace_id, id: row.id})
SET o += row.props
