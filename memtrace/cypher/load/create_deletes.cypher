// Explicit deletions: the operation that sent a variable to a delete marker (endpoints by element id).
// params: $rows
// returns: -
UNWIND $rows AS row
MATCH (o:Operation) WHERE elementId(o) = row.op
MATCH (v:Variable) WHERE elementId(v) = row.var
CREATE (o)-[:DELETES {edge_id: row.edge_id}]->(v)
