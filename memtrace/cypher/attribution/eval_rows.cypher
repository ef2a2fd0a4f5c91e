// Labeled cases with one run's attribution (if any), for evaluation.
// params: $run_id, $trace_id, $label_source
// returns: trace_id, case_id, answer_op, label_op, label_kind, label_type, label_source, attr_op, attr_kind, error_type, judge, llm_calls, tokens_in, tokens_out, seconds, error
MATCH (t:Trace)-[:HAS_CASE]->(c:Case)-[l:LABELED]->(lo:Operation)
WHERE ($trace_id IS NULL OR t.id = $trace_id) AND t.load_state = 'complete'
  AND ($label_source IS NULL OR l.source = $label_source)
OPTIONAL MATCH (c)-[:HAS_ATTRIBUTION]->(a:Attribution {run_id: $run_id})
OPTIONAL MATCH (a)-[:BLAMES]->(ao:Operation)
CALL (c) {
  OPTIONAL MATCH (c)-[:QUERY]->(:Variable)<-[:READS]-(answer:Operation {kind: 'generation'})
  WITH answer ORDER BY answer.seq
  RETURN head(collect(answer.id)) AS answer_op
}
RETURN t.id AS trace_id, c.id AS case_id, answer_op, lo.id AS label_op, lo.kind AS label_kind,
       l.error_type AS label_type, l.source AS label_source, ao.id AS attr_op,
       ao.kind AS attr_kind, a.error_type AS error_type, a.judge AS judge,
       a.llm_calls AS llm_calls, a.tokens_in AS tokens_in, a.tokens_out AS tokens_out,
       a.seconds AS seconds,
       // properties(a).error: a.error made the server warn that the key does not exist when no
       // attribution has failed yet.
       properties(a).error AS error
ORDER BY trace_id, case_id
