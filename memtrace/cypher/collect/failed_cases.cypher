// The failed cases of traces just loaded, for the receiver's --attribute (one Trace id seek each, never a scan of every trace).
// params: $trace_ids
// returns: trace_id, case_id
UNWIND $trace_ids AS trace_id
MATCH (t:Trace {id: trace_id})-[:HAS_CASE]->(c:Case)
WHERE t.load_state = 'complete' AND c.failed = true
RETURN trace_id, c.id AS case_id
ORDER BY trace_id, case_id
