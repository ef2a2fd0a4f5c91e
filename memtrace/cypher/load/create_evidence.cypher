// Link cases to their source evidence variables (rows: one case, its variables; all by element id).
// params: $rows
// returns: -
UNWIND $rows AS row
MATCH (c:Case) WHERE elementId(c) = row.case
UNWIND row.vars AS var
MATCH (v:Variable) WHERE elementId(v) = var
CREATE (c)-[:EVIDENCE]->(v)
