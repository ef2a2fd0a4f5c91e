// Representative cases of a run for the report: question, answers, verdict, the blamed operation's inputs and outputs, the evidence.
// params: $run_id, $cases
// returns: trace_id, case_id, question, golden_answers, prediction, error_type, reason, confidence, op_id, op_name, op_inputs, op_outputs, evidence
// In Neo4j Browser: :params {run_id: 'demo', cases: [{trace_id: 'demo-mem0-1', case_id: 'locomo-qa-1-1'}]}
UNWIND $cases AS ref
MATCH (c:Case {trace_id: ref.trace_id, id: ref.case_id})-[:HAS_ATTRIBUTION]->(a:Attribution {run_id: $run_id})
OPTIONAL MATCH (a)-[:BLAMES]->(o:Operation)
CALL (o) {
  OPTIONAL MATCH (o)-[:READS]->(v:Variable)
  WITH v ORDER BY v.seq
  RETURN collect({id: v.id, category: v.category, value: v.value}) AS op_inputs
}
CALL (o) {
  OPTIONAL MATCH (o)-[:WRITES]->(v:Variable)
  WITH v ORDER BY v.seq
  RETURN collect({id: v.id, category: v.category, value: v.value}) AS op_outputs
}
CALL (c) {
  OPTIONAL MATCH (c)-[:EVIDENCE]->(m:Variable)
  WITH m ORDER BY m.seq
  RETURN collect({id: m.id, value: m.value}) AS evidence
}
RETURN c.trace_id AS trace_id, c.id AS case_id, c.query AS question,
       c.golden_answers AS golden_answers, c.prediction AS prediction,
       a.error_type AS error_type, a.reason AS reason, a.confidence AS confidence,
       o.id AS op_id, o.name AS op_name, op_inputs, op_outputs, evidence
