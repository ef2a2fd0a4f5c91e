// Where the evidence of one run's attributed failed cases sits: its session's index and its age in messages at question time.
// params: $run_id, $system
// returns: system, trace_id, case_id, error_type, evidence_id, session_index, messages_ago
// In Neo4j Browser: :params {run_id: 'demo', system: null}
// Positions count the trace's `message` variables in execution order: session_index is the
// evidence's session among the sessions holding messages (1 = first), messages_ago the messages
// recorded between the evidence and the question. Each trace's messages are listed once and
// searched in memory: a seek per evidence and message made this 20x slower at 10k cases.
MATCH (a:Attribution {run_id: $run_id})
MATCH (t:Trace {id: a.trace_id})
WHERE $system IS NULL OR t.system = $system
WITH t, collect(a) AS attributions
CALL (t) {
  MATCH (x:Variable {trace_id: t.id, category: 'message'})
  WITH x ORDER BY x.seq
  WITH collect(x.seq) AS seqs, collect(x.session) AS sessions
  RETURN seqs,
         reduce(order = [], s IN sessions |
                CASE WHEN s IS NULL OR s IN order THEN order ELSE order + s END) AS session_order
}
UNWIND attributions AS a
MATCH (c:Case {trace_id: a.trace_id, id: a.case_id})-[:QUERY]->(q:Variable)
MATCH (c)-[:EVIDENCE]->(m:Variable)
OPTIONAL MATCH (a)-[:BLAMES]->(o:Operation)
// properties read once per row: inside a list predicate they are read again for every element
WITH t, a, o, m, seqs, session_order, m.seq AS from_seq, q.seq AS to_seq, m.session AS session
WITH t, a, o, m, seqs, from_seq, to_seq,
     [i IN range(0, size(session_order) - 1) WHERE session_order[i] = session] AS found
RETURN t.system AS system, a.trace_id AS trace_id, a.case_id AS case_id,
       CASE WHEN o IS NULL THEN null ELSE a.error_type END AS error_type, m.id AS evidence_id,
       CASE WHEN size(found) = 0 THEN null ELSE found[0] + 1 END AS session_index,
       size([s IN seqs WHERE from_seq < s < to_seq]) AS messages_ago
ORDER BY system, trace_id, case_id, evidence_id
