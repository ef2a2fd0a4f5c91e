// Cases of one attribution run whose attribution failed: counted and listed, never dropped.
// params: $run_id, $system
// returns: system, trace_id, case_id, question, error
// In Neo4j Browser: :params {run_id: 'demo', system: null}
MATCH (c:Case)-[:HAS_ATTRIBUTION]->(a:Attribution {run_id: $run_id})
WHERE a.error IS NOT NULL OR NOT EXISTS { (a)-[:BLAMES]->(:Operation) }
MATCH (t:Trace {id: a.trace_id})
WHERE $system IS NULL OR t.system = $system
RETURN t.system AS system, a.trace_id AS trace_id, a.case_id AS case_id, c.query AS question,
       coalesce(a.error, 'no operation blamed') AS error
ORDER BY system, trace_id, case_id
