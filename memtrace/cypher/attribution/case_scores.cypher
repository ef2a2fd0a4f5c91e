// Per complete trace (or $trace_id): its case count and the cases without a score (never taken).
// params: $trace_id
// returns: trace_id, cases, unscored
MATCH (t:Trace)
WHERE ($trace_id IS NULL OR t.id = $trace_id) AND t.load_state = 'complete'
MATCH (t)-[:HAS_CASE]->(c:Case)
WITH t.id AS trace_id, c ORDER BY c.id
RETURN trace_id, count(c) AS cases, collect(CASE WHEN c.failed IS NULL THEN c.id END) AS unscored
ORDER BY trace_id
