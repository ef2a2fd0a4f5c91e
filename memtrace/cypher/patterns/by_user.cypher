// Failed cases of a run per user and session (the ids a timeline's cases carry; null for cases of whole traces): whose memory fails, and how.
// params: $run_id, $system, $user_id
// returns: user_id, session_id, error_type, cases, traces
// In Neo4j Browser: :params {run_id: 'demo', system: null, user_id: null}
MATCH (c:Case)-[:HAS_ATTRIBUTION]->(a:Attribution {run_id: $run_id})
WHERE a.error IS NULL AND ($user_id IS NULL OR c.user_id = $user_id)
MATCH (t:Trace {id: a.trace_id})
WHERE $system IS NULL OR t.system = $system
RETURN c.user_id AS user_id, c.session_id AS session_id, a.error_type AS error_type,
       count(*) AS cases, collect(DISTINCT a.trace_id) AS traces
ORDER BY cases DESC, user_id, session_id, error_type
