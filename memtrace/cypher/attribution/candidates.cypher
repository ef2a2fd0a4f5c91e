// Candidate operations of a case, in execution order, each with why it is one.
// params: $trace_id, $answer_op, $query_id, $evidence_ids, $max_depth
// returns: op_id, name, kind, seq, role
// Roles: `reads_evidence` (reads a starting evidence message), `trail` (moves evidence along
// FLOWS_TO), `deletes` / `new_version` (deletes or re-versions a variable on a trail before the
// answer), `retrieval` (reads the case's question), `answer`. Ops where a trail ends by content
// (a memory that lost the sentence) are added by the caller from the lexical trails; the caller
// drops the readers on a branch that never feeds the answer (trails.off_path).
// The trail steps are found as in evidence_flow.cypher (reach by breadth-first search, then one
// last step), not by enumerating paths.
MATCH (a:Operation {trace_id: $trace_id, id: $answer_op})
CALL (a) {
  UNWIND $evidence_ids AS message_id
  MATCH (m:Variable {trace_id: $trace_id, id: message_id})
  CALL (m) {
    RETURN m AS u, 0 AS depth
    UNION
    MATCH p = (m)-[:FLOWS_TO*1..11]->(u:Variable)
    WHERE all(n IN nodes(p) WHERE n.seq >= m.seq)
    RETURN u, min(length(p)) AS depth
  }
  MATCH (u)-[r:FLOWS_TO]->(x:Variable)
  WHERE x.seq <= a.seq AND depth < $max_depth
  WITH DISTINCT m, r, x
  CALL (m, r, x) {
    MATCH (o:Operation {trace_id: $trace_id, id: r.op_id})
    RETURN o, CASE WHEN startNode(r) = m THEN 'reads_evidence' ELSE 'trail' END AS role
    UNION
    MATCH (x)<-[:DELETES]-(o:Operation)
    RETURN o, 'deletes' AS role
    UNION
    MATCH (x)-[:NEXT_VERSION]->(:Variable)<-[:WRITES]-(o:Operation)
    WHERE o.kind <> 'retrieval'
    RETURN o, 'new_version' AS role
  }
  RETURN o, role
  UNION
  MATCH (:Variable {trace_id: $trace_id, id: $query_id})<-[:READS]-(o:Operation {kind: 'retrieval'})
  RETURN o, 'retrieval' AS role
  UNION
  RETURN a AS o, 'answer' AS role
}
WITH a, o, role
WHERE o.seq <= a.seq
RETURN o.id AS op_id, o.name AS name, o.kind AS kind, o.seq AS seq, role
ORDER BY seq, role
