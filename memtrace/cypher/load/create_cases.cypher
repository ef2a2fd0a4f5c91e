// Create the cases (evaluated questions) of a freshly cleared trace, link them to it and return their element ids.
// params: $trace_id, $rows
// returns: ids
MATCH (t:Trace {id: $trace_id})
UNWIND $rows AS row
CREATE (t)-[:HAS_CASE]->(c:Case {trace_id: $trace_id, id: row.id})
SET c += row.props
RETURN collect([row.n, elementId(c)]) AS ids
