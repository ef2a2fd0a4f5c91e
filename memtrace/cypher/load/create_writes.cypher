// Link each operation to the variables it writes (rows: one operation, its variables).
// params: $trace_id, $rows
// returns: -
UNWIND $rows AS row
MATCH (o:Operation {trace_id: $trace_id, id: row.op})
UNWIND row.vars AS var_id
MATCH (v:Variable {trace_id: $trace_id, id: var_id})
MERGE (o)-[:WRITES]->(v)
