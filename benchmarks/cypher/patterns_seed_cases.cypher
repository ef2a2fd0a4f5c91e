// Benchmark seed: failed cases of one trace with query, evidence, search and answer ops, and one Attribution each (blaming c.op_id).
// params: $trace_id, $run_id, $cases
// returns: -
MATCH (t:Trace {id: $trace_id})
MATCH (q:Variable {trace_id: $trace_id, id: 'qa-prompt@1'})
MATCH (k:Variable {trace_id: $trace_id, id: 'top_k@1'})
UNWIND $cases AS c
MATCH (m1:Variable {trace_id: $trace_id, id: c.evidence[0]})
CREATE (case:Case {trace_id: $trace_id, id: c.id, failed: true, category: c.category,
        query: 'question ' + c.id, prediction: 'wrong', golden_answers: ['right']})
CREATE (qv:Variable {trace_id: $trace_id, id: 'query-' + c.id, seq: c.seq, name: c.id,
        version: 1, category: 'message & query', class_name: 'query', value: 'question'})
CREATE (s:Operation {trace_id: $trace_id, id: 's-' + c.id, seq: c.seq + 1,
        name: 'memory_system.search_vector_store', kind: 'retrieval'})
CREATE (a:Operation {trace_id: $trace_id, id: 'qa-' + c.id, seq: c.seq + 2,
        name: 'question-answering', kind: 'generation'})
CREATE (t)-[:HAS_CASE]->(case), (case)-[:QUERY]->(qv), (case)-[:EVIDENCE]->(m1),
       (s)-[:READS]->(qv), (s)-[:READS]->(k), (a)-[:READS]->(qv), (a)-[:READS]->(q)
WITH case, c
CALL (case, c) {
  UNWIND c.evidence[1..] AS more
  MATCH (m:Variable {trace_id: $trace_id, id: more})
  CREATE (case)-[:EVIDENCE]->(m)
}
CREATE (case)-[:HAS_ATTRIBUTION]->(at:Attribution {id: $run_id + '/' + c.id, run_id: $run_id,
        trace_id: $trace_id, case_id: c.id, op_id: c.op_id, error_type: c.error_type,
        confidence: c.confidence, error: c.error, reason: 'synthetic', created_at: datetime()})
WITH at, c
CALL (at, c) {
  MATCH (o:Operation {trace_id: $trace_id, id: c.op_id})
  CREATE (at)-[:BLAMES]->(o)
}
