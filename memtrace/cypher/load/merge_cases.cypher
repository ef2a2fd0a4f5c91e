// Create or update cases (evaluated questions) of a trace and link them to it.
// params: $trace_id, $rows
// returns: -
MATCH (t:Trace {id: $trace_id})
UNWIND $rows AS row
MERGE (c:Case {trace_id: $trace_id, id: row.id})
SET c += row.props
MERGE (t)-[:HAS_CASE]->(c)
