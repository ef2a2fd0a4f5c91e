// Backward reachability through derived DEPENDS_ON edges: every op the answer op depends on.
// params: $trace_id, $answer_op
// returns: op_id, kind, seq
MATCH (a:Operation {trace_id: $trace_id, id: $answer_op})-[:DEPENDS_ON*0..]->(o:Operation)
RETURN DISTINCT o.id AS op_id, o.kind AS kind, o.seq AS seq
ORDER BY seq
