// One case's anchors: question, gold answers, answer op, its retrieval ops and gold evidence.
// params: $trace_id, $case_id
// returns: case_id, question, golden_answers, prediction, failed, query_id, answer_op, answer_seq, retrieval_ops, evidence_ids
// The case by its key, not by expanding the trace's cases: a timeline holds thousands of them.
MATCH (c:Case {trace_id: $trace_id, id: $case_id})
MATCH (t:Trace {id: $trace_id})
WHERE t.load_state = 'complete' AND (t)-[:HAS_CASE]->(c)
OPTIONAL MATCH (c)-[:QUERY]->(q:Variable)
OPTIONAL MATCH (c)-[:PREDICTION]->(p:Variable)
// The answer op reads the question; the prediction variable alone is ambiguous because equal
// values may share one variable across cases. Of the generations reading the question, the one
// that wrote the prediction (an agent's earlier generation may only have called a tool).
CALL (q, p) {
  OPTIONAL MATCH (q)<-[:READS]-(a:Operation {kind: 'generation'})
  WITH a ORDER BY CASE WHEN EXISTS { MATCH (a)-[:WRITES]->(p) } THEN 0 ELSE 1 END, a.seq
  LIMIT 1
  OPTIONAL MATCH (p)<-[:WRITES]-(w:Operation {kind: 'generation'})
  WITH a, w ORDER BY w.seq
  WITH a, head(collect(w)) AS writer
  RETURN coalesce(a, writer) AS answer
}
CALL (q, answer) {
  OPTIONAL MATCH (q)<-[:READS]-(r:Operation {kind: 'retrieval'})
  WHERE r.seq < answer.seq
  WITH collect(r {.id, .seq}) AS direct
  OPTIONAL MATCH (answer)-[:DEPENDS_ON*1..3]->(r2:Operation {kind: 'retrieval'})
  WITH direct, r2 ORDER BY r2.seq DESC
  WITH direct, collect(r2 {.id, .seq})[..1] AS latest
  RETURN CASE WHEN size(direct) > 0 THEN direct ELSE latest END AS retrieval_ops
}
// In message order: which key sentence a verdict quotes must not depend on storage order.
CALL (c) {
  OPTIONAL MATCH (c)-[:EVIDENCE]->(m:Variable)
  WITH m ORDER BY m.seq, m.id
  RETURN collect(m.id) AS evidence_ids
}
RETURN c.id AS case_id, c.query AS question, coalesce(c.golden_answers, []) AS golden_answers,
       c.prediction AS prediction, c.failed AS failed, q.id AS query_id, answer.id AS answer_op,
       answer.seq AS answer_seq, retrieval_ops, evidence_ids
