// Variable-level flow edges, tagged with the operation that caused them.
// params: $trace_id, $rows
// returns: -
UNWIND $rows AS row
MATCH (s:Variable {trace_id: $trace_id, id: row.source})
MATCH (t:Variable {trace_id: $trace_id, id: row.target})
CREATE (s)-[f:FLOWS_TO {edge_id: row.id}]->(t)
SET f.op_id = row.op, f.category = row.category
