// Every review of one case, newest first, with whether it is its reviewer's latest (the one that counts).
// params: $trace_id, $case_id
// returns: id, reviewer, at, decision, op_id, error_type, note, run_id
MATCH (c:Case {trace_id: $trace_id, id: $case_id})-[:HAS_REVIEW]->(r:Review)
RETURN r.id AS id, r.reviewer AS reviewer, toString(r.at) AS at, r.decision AS decision,
       r.op_id AS op_id, r.error_type AS error_type, r.note AS note, r.run_id AS run_id
ORDER BY r.at DESC, r.id
