// Attributed failed cases of one run by system, question category and error type.
// params: $run_id, $system
// returns: system, category, error_type, cases
// In Neo4j Browser: :params {run_id: 'demo', system: null}
// error_type is null for cases whose attribution failed (they are counted, not dropped).
MATCH (c:Case)-[:HAS_ATTRIBUTION]->(a:Attribution {run_id: $run_id})
MATCH (t:Trace {id: a.trace_id})
WHERE $system IS NULL OR t.system = $system
OPTIONAL MATCH (a)-[:BLAMES]->(o:Operation)
RETURN t.system AS system, coalesce(c.category, 'unknown') AS category,
       CASE WHEN o IS NULL THEN null ELSE a.error_type END AS error_type, count(a) AS cases
ORDER BY system, category, error_type
