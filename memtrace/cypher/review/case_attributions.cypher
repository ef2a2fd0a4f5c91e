// Every run's attribution of one case (the verdict a reviewer checks, and the other judges').
// params: $trace_id, $case_id
// returns: run_id, judge, op_id, error_type, confidence, reason, error, created_at
MATCH (c:Case {trace_id: $trace_id, id: $case_id})-[:HAS_ATTRIBUTION]->(a:Attribution)
OPTIONAL MATCH (a)-[:BLAMES]->(o:Operation)
RETURN a.run_id AS run_id, a.judge AS judge, o.id AS op_id, a.error_type AS error_type,
       a.confidence AS confidence, a.reason AS reason, properties(a).error AS error,
       toString(a.created_at) AS created_at
ORDER BY run_id
