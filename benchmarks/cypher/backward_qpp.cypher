// Backward reachability with a quantified path pattern over WRITES/READS lineage (bounded depth).
// params: $trace_id, $answer_op, $max_hops
// returns: op_id, kind, seq
// Each hop goes from a variable to an op that wrote it and on to a variable that op read. Paths
// are enumerated (not just nodes), so the depth must stay bounded; see docs/attribution.md.
MATCH (a:Operation {trace_id: $trace_id, id: $answer_op})-[:READS]->(input:Variable)
MATCH path = (input) ((:Variable)<-[:WRITES]-(w:Operation)-[:READS]->(:Variable)){1,3}
WHERE size(w) <= $max_hops AND all(op IN w WHERE op.seq < a.seq)
UNWIND w AS o
RETURN DISTINCT o.id AS op_id, o.kind AS kind, o.seq AS seq
ORDER BY seq
