// Link each operation to its session, the variables it reads and writes, and the earlier operations it depends on.
// params: $trace_id, $rows
// returns: -
UNWIND $rows AS row
MATCH (o:Operation {trace_id: $trace_id, id: row.op})
CALL (o, row) {
  UNWIND row.reads AS var_id
  MATCH (v:Variable {trace_id: $trace_id, id: var_id})
  CREATE (o)-[:READS]->(v)
}
CALL (o, row) {
  UNWIND row.writes AS var_id
  MATCH (v:Variable {trace_id: $trace_id, id: var_id})
  CREATE (o)-[:WRITES]->(v)
}
CALL (o, row) {
  UNWIND row.deps AS dep
  MATCH (a:Operation {trace_id: $trace_id, id: dep.op})
  CREATE (o)-[:DEPENDS_ON {via: dep.via}]->(a)
}
CALL (o, row) {
  MATCH (s:Session {trace_id: $trace_id, id: row.session})
  CREATE (o)-[:IN_SESSION]->(s)
}
