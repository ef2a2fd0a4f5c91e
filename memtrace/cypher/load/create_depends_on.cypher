// Link each operation to the earlier operations whose outputs it reads (derived, acyclic).
// params: $trace_id, $rows
// returns: -
UNWIND $rows AS row
MATCH (b:Operation {trace_id: $trace_id, id: row.op})
UNWIND row.deps AS dep
MATCH (a:Operation {trace_id: $trace_id, id: dep.op})
MERGE (b)-[d:DEPENDS_ON]->(a)
SET d.via = dep.via
