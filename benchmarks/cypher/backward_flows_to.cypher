// Backward reachability through variable-level FLOWS_TO edges from the prediction's inputs.
// params: $trace_id, $answer_op
// returns: op_id, kind, seq
MATCH (a:Operation {trace_id: $trace_id, id: $answer_op})-[:WRITES]->(p:Variable)
MATCH (p)<-[:FLOWS_TO]-{1,}(:Variable)<-[:WRITES]-(o:Operation)
WHERE o.seq <= a.seq
RETURN DISTINCT o.id AS op_id, o.kind AS kind, o.seq AS seq
ORDER BY seq
