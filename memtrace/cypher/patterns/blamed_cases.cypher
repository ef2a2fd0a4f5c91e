// The blamed operation of every attributed case of a run: where a what-if repair lands.
// params: $run_id, $system
// returns: trace_id, case_id, op_id
// In Neo4j Browser: :params {run_id: 'demo', system: null}
MATCH (a:Attribution {run_id: $run_id})-[:BLAMES]->(o:Operation)
WHERE a.error IS NULL
MATCH (t:Trace {id: a.trace_id})
WHERE $system IS NULL OR t.system = $system
RETURN a.trace_id AS trace_id, a.case_id AS case_id, o.id AS op_id
ORDER BY trace_id, case_id
