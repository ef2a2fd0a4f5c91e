// Link cases to their source evidence variables (rows: one case, its variables).
// params: $trace_id, $rows
// returns: -
UNWIND $rows AS row
MATCH (c:Case {trace_id: $trace_id, id: row.case})
UNWIND row.vars AS var_id
MATCH (v:Variable {trace_id: $trace_id, id: var_id})
CREATE (c)-[:EVIDENCE]->(v)
