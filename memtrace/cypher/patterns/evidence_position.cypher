// Where the evidence of one run's attributed failed cases sits: its session's index and its age in messages at question time.
// params: $run_id, $system
// returns: system, trace_id, case_id, error_type, evidence_id, session_index, messages_ago
// In Neo4j Browser: :params {run_id: 'demo', system: null}
// session_index: 1 + the sessions that held a message before this one; messages_ago: messages
// recorded between the evidence and the question.
MATCH (c:Case)-[:HAS_ATTRIBUTION]->(a:Attribution {run_id: $run_id})
MATCH (t:Trace {id: a.trace_id})
WHERE $system IS NULL OR t.system = $system
MATCH (c)-[:QUERY]->(q:Variable)
MATCH (c)-[:EVIDENCE]->(m:Variable)
OPTIONAL MATCH (a)-[:BLAMES]->(o:Operation)
CALL (m) {
  OPTIONAL MATCH (x:Variable {trace_id: m.trace_id, category: m.category})
  WHERE x.seq < m.seq AND x.session IS NOT NULL AND x.session <> m.session
  RETURN count(DISTINCT x.session) + 1 AS session_index
}
CALL (m, q) {
  OPTIONAL MATCH (x:Variable {trace_id: m.trace_id, category: m.category})
  WHERE m.seq < x.seq < q.seq
  RETURN count(x) AS messages_ago
}
RETURN t.system AS system, a.trace_id AS trace_id, a.case_id AS case_id,
       CASE WHEN o IS NULL THEN null ELSE a.error_type END AS error_type, m.id AS evidence_id,
       session_index, messages_ago
ORDER BY system, trace_id, case_id, evidence_id
