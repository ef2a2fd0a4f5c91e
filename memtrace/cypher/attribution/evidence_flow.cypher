// Forward flow from starting evidence messages: every variable-level step until the answer.
// params: $trace_id, $evidence_ids, $max_seq, $max_depth
// returns: message_id, step, op_id, op_name, op_kind, op_seq, source_id, target_id, target_seq, target_value
// A trail is a chain of FLOWS_TO edges (each inside one operation); steps after the answer are
// outside the case. Each distinct step is reported once, with the shortest depth it is reached at.
// Variables identified by content (equal values share one variable) were created by the first op
// producing that value: a trail may enter such an older variable but not go on through it, or it
// would jump into unrelated operations.
// Reach, then last step: a pruning breadth-first expansion finds each variable a trail reaches
// (and its depth) once, where enumerating paths multiplied parallel edges: a long-context window
// feeds one shared context variable by one edge per question (~200), and that context every
// answer (~200 more), so each case walked ~10^5 paths through every later window version.
// The reach is bounded by 11 = FLOW_DEPTH - 1 (a literal): the last step makes the 12th.
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
WHERE x.seq <= $max_seq AND depth < $max_depth
WITH message_id, r, x, min(depth + 1) AS step
MATCH (o:Operation {trace_id: $trace_id, id: r.op_id})
RETURN message_id, step, o.id AS op_id, o.name AS op_name, o.kind AS op_kind, o.seq AS op_seq,
       startNode(r).id AS source_id, x.id AS target_id, x.seq AS target_seq,
       x.value AS target_value
ORDER BY message_id, op_seq, step
