// Complete traces that hold a case with this id (to resolve `explain CASE_ID` without --trace).
// params: $case_id
// returns: trace_id
MATCH (t:Trace)-[:HAS_CASE]->(:Case {id: $case_id})
WHERE t.load_state = 'complete'
RETURN t.id AS trace_id
ORDER BY trace_id
