// Explicit deletions: the operation that sent a variable to a delete marker.
// params: $trace_id, $rows
// returns: -
UNWIND $rows AS row
MATCH (o:Operation {trace_id: $trace_id, id: row.op})
MATCH (v:Variable {trace_id: $trace_id, id: row.var})
CREATE (o)-[:DELETES {edge_id: row.edge_id}]->(v)
