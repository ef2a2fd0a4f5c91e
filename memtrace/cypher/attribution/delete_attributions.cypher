// Delete the attributions of one run (optionally of one trace only); returns how many.
// params: $run_id, $trace_id
// returns: deleted
MATCH (a:Attribution {run_id: $run_id})
WHERE $trace_id IS NULL OR a.trace_id = $trace_id
DETACH DELETE a
RETURN count(*) AS deleted
