// Create or update sessions of a trace and link them to it.
// params: $trace_id, $rows
// returns: -
MATCH (t:Trace {id: $trace_id})
UNWIND $rows AS row
MERGE (s:Session {trace_id: $trace_id, id: row.id})
SET s += row.props
MERGE (t)-[:HAS_SESSION]->(s)
