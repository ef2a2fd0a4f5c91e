// Create the cases (evaluated questions) of a freshly cleared trace and link them to it.
// params: $trace_id, $rows
// returns: -
MATCH (t:Trace {id: $trace_id})
UNWIND $rows AS row
CREATE (t)-[:HAS_CASE]->(c:Case {trace_id: $trace_id, id: row.id})
SET c += row.props
