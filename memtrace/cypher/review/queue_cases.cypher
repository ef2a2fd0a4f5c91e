// The cases one attribution run attributed, for the review queues: its verdict, other runs' blames of the case, who reviewed it.
// params: $run_id, $reviewer
// returns: trace_id, case_id, system, question, op_id, op_name, op_kind, error_type, confidence, judge, error, other_blames, my_decision, reviewers
// other_blames: {run_id, judge, op_id} of every other run's attribution of the case that blames
// an op; my_decision: the latest decision of $reviewer on the case (null: not reviewed by them).
MATCH (a:Attribution {run_id: $run_id})<-[:HAS_ATTRIBUTION]-(c:Case)<-[:HAS_CASE]-(t:Trace)
WHERE t.load_state = 'complete'
OPTIONAL MATCH (a)-[:BLAMES]->(o:Operation)
CALL (c, a) {
  OPTIONAL MATCH (c)-[:HAS_ATTRIBUTION]->(other:Attribution)-[:BLAMES]->(blamed:Operation)
  WHERE other <> a
  RETURN collect(other {.run_id, .judge, op_id: blamed.id}) AS other_blames
}
CALL (c) {
  OPTIONAL MATCH (c)-[:HAS_REVIEW]->(r:Review)
  WITH r ORDER BY r.at DESC
  WITH collect(r) AS reviews
  RETURN head([r IN reviews WHERE r.reviewer = $reviewer | r.decision]) AS my_decision,
         size(reduce(names = [], r IN reviews |
           CASE WHEN r.reviewer IN names THEN names ELSE names + r.reviewer END)) AS reviewers
}
RETURN t.id AS trace_id, c.id AS case_id, t.system AS system, c.query AS question,
       o.id AS op_id, o.name AS op_name, o.kind AS op_kind, a.error_type AS error_type,
       a.confidence AS confidence, a.judge AS judge, properties(a).error AS error, other_blames,
       my_decision, reviewers
ORDER BY trace_id, case_id
