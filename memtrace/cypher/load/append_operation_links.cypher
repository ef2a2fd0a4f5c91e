// Append step: each new operation's session, the variables it reads and writes (new or from earlier requests, by id), then the earlier operations it depends on (writers of what it reads, earlier in seq).
// params: $trace_id, $rows
// returns: linked
UNWIND $rows AS row
MATCH (o:Operation {trace_id: $trace_id, id: row.op})
CALL (o, row) {
  MATCH (s:Session {trace_id: $trace_id, id: row.session})
  CREATE (o)-[:IN_SESSION]->(s)
}
CALL (o, row) {
  UNWIND row.reads AS var
  MATCH (v:Variable {trace_id: $trace_id, id: var})
  CREATE (o)-[:READS]->(v)
}
CALL (o, row) {
  UNWIND row.writes AS var
  MATCH (v:Variable {trace_id: $trace_id, id: var})
  CREATE (o)-[:WRITES]->(v)
}
CALL (o) {
  MATCH (o)-[:READS]->(v:Variable)<-[:WRITES]-(w:Operation)
  WHERE w.seq < o.seq
  WITH w, collect(v.id) AS via
  CREATE (o)-[:DEPENDS_ON {via: via}]->(w)
}
RETURN count(o) AS linked
