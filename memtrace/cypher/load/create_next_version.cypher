// Link consecutive versions of the same variable identity (endpoints by element id).
// params: $rows
// returns: -
UNWIND $rows AS row
MATCH (a:Variable) WHERE elementId(a) = row.older
MATCH (b:Variable) WHERE elementId(b) = row.newer
CREATE (a)-[:NEXT_VERSION]->(b)
