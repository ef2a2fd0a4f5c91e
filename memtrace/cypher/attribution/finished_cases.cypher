// Cases this run has already attributed without an error (what `attribute --resume` skips).
// params: $run_id
// returns: trace_id, case_id
MATCH (c:Case)-[:HAS_ATTRIBUTION]->(a:Attribution {run_id: $run_id})
WHERE properties(a).error IS NULL
RETURN c.trace_id AS trace_id, c.id AS case_id
