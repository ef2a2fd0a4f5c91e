// Swap step: delete the attributions of the copy a re-load replaces (re-loading a trace deletes its attributions).
// params: $trace_id
// returns: deleted
MATCH (a:Attribution {trace_id: $trace_id})
DETACH DELETE a
RETURN count(*) AS deleted
