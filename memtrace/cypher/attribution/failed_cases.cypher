// Failed cases of one complete trace (or of every complete trace when $trace_id is null).
// params: $trace_id
// returns: trace_id, case_id
MATCH (t:Trace)
WHERE ($trace_id IS NULL OR t.id = $trace_id) AND t.load_state = 'complete'
MATCH (t)-[:HAS_CASE]->(c:Case)
WHERE c.failed = true
RETURN t.id AS trace_id, c.id AS case_id
ORDER BY trace_id, case_id
