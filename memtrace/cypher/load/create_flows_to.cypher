// Variable-level flow edges (endpoints by element id), tagged with the operation that caused them.
// params: $rows
// returns: -
UNWIND $rows AS row
MATCH (s:Variable) WHERE elementId(s) = row.source
MATCH (t:Variable) WHERE elementId(t) = row.target
CREATE (s)-[f:FLOWS_TO {edge_id: row.id}]->(t)
SET f.op_id = row.op, f.category = row.category
