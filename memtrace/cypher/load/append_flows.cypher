// Append step: variable-level flow inside the new operations (edges by variable id); an edge into a deletion marker is also the operation's DELETES of its source.
// params: $trace_id, $rows
// returns: linked
UNWIND $rows AS row
MATCH (s:Variable {trace_id: $trace_id, id: row.source})
MATCH (t:Variable {trace_id: $trace_id, id: row.target})
CREATE (s)-[f:FLOWS_TO {edge_id: row.id}]->(t)
SET f.op_id = row.op, f.category = row.category
WITH s, t, row
CALL (s, t, row) {
  WITH s, t, row WHERE t.is_marker
  MATCH (o:Operation {trace_id: $trace_id, id: row.op})
  CREATE (o)-[:DELETES {edge_id: row.id}]->(s)
}
RETURN count(*) AS linked
