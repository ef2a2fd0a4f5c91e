// Link each operation to its session, the variables it reads and writes, and the earlier operations it depends on (all by element id).
// params: $rows
// returns: -
UNWIND $rows AS row
MATCH (o:Operation) WHERE elementId(o) = row.op
CALL (o, row) {
  UNWIND row.reads AS var
  MATCH (v:Variable) WHERE elementId(v) = var
  CREATE (o)-[:READS]->(v)
}
CALL (o, row) {
  UNWIND row.writes AS var
  MATCH (v:Variable) WHERE elementId(v) = var
  CREATE (o)-[:WRITES]->(v)
}
CALL (o, row) {
  UNWIND row.deps AS dep
  MATCH (a:Operation) WHERE elementId(a) = dep.op
  CREATE (o)-[:DEPENDS_ON {via: dep.via}]->(a)
}
CALL (o, row) {
  MATCH (s:Session) WHERE elementId(s) = row.session
  CREATE (o)-[:IN_SESSION]->(s)
}
