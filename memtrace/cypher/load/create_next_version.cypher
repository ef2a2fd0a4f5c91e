// Link consecutive versions of the same variable identity.
// params: $trace_id, $rows
// returns: -
UNWIND $rows AS row
MATCH (a:Variable {trace_id: $trace_id, id: row.older})
MATCH (b:Variable {trace_id: $trace_id, id: row.newer})
CREATE (a)-[:NEXT_VERSION]->(b)
