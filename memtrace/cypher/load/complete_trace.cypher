// Mark a trace complete and store its counts.
// params: $trace_id, $counts
// returns: -
MATCH (t:Trace {id: $trace_id})
SET t += $counts, t.load_state = 'complete'
