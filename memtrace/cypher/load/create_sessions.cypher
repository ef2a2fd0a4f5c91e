// Create the sessions of a freshly cleared trace and link them to it.
// params: $trace_id, $rows
// returns: -
MATCH (t:Trace {id: $trace_id})
UNWIND $rows AS row
CREATE (t)-[:HAS_SESSION]->(s:Session {trace_id: $trace_id, id: row.id})
SET s += row.props
