// Human labels (each reviewer's latest) with every run's attribution of the labelled case: for export and agreement figures.
// params: $trace_id, $reviewer
// returns: trace_id, case_id, query_id, reviewer, at, label_op, label_name, label_type, reason, evidence_ids, attributions
// attributions: {run_id, judge, op_id, op_name, error_type} of every run that attributed the case.
// reviewer: '(loaded)' for a human label that came with a trace file and names nobody.
MATCH (t:Trace)-[:HAS_CASE]->(c:Case)-[l:LABELED {source: 'human'}]->(lo:Operation)
WHERE ($trace_id IS NULL OR t.id = $trace_id) AND ($reviewer IS NULL OR l.reviewer = $reviewer)
  AND t.load_state = 'complete'
OPTIONAL MATCH (c)-[:QUERY]->(q:Variable)
CALL (c) {
  OPTIONAL MATCH (c)-[:EVIDENCE]->(m:Variable)
  WITH m ORDER BY m.seq, m.id
  RETURN collect(m.id) AS evidence_ids
}
CALL (c) {
  OPTIONAL MATCH (c)-[:HAS_ATTRIBUTION]->(a:Attribution)
  OPTIONAL MATCH (a)-[:BLAMES]->(ao:Operation)
  WITH a, ao ORDER BY a.run_id
  RETURN collect(a {.run_id, .judge, .error_type, op_id: ao.id, op_name: ao.name}) AS attributions
}
RETURN t.id AS trace_id, c.id AS case_id, q.id AS query_id,
       coalesce(l.reviewer, '(loaded)') AS reviewer,
       toString(l.at) AS at, lo.id AS label_op, lo.name AS label_name, l.error_type AS label_type,
       l.reason AS reason, evidence_ids, attributions
ORDER BY trace_id, case_id, reviewer
