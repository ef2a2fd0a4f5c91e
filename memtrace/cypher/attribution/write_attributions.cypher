// Write one run's attributions, replacing that run's earlier attribution of the same cases.
// params: $run_id, $rows
// returns: written
UNWIND $rows AS row
MATCH (c:Case {trace_id: row.trace_id, id: row.case_id})
// Lock the case first (a write takes its lock until commit): two `attribute` processes writing
// the same case then take turns, the second replacing the first's attribution, never adding one.
SET c._writing = true
REMOVE c._writing
WITH c, row
CALL (c) {
  MATCH (c)-[:HAS_ATTRIBUTION]->(old:Attribution {run_id: $run_id})
  DETACH DELETE old
}
CREATE (c)-[:HAS_ATTRIBUTION]->(a:Attribution)
SET a = row.props, a.run_id = $run_id, a.id = $run_id + '/' + row.case_id,
    a.created_at = datetime()
WITH a, row
CALL (a, row) {
  MATCH (o:Operation {trace_id: row.trace_id, id: row.op_id})
  CREATE (a)-[:BLAMES]->(o)
}
RETURN count(a) AS written
