// Mark a complete trace as loading again: a re-load too big for one swap transaction replaces its copy in batches.
// params: $trace_id
// returns: -
MATCH (t:Trace {id: $trace_id})
SET t.load_state = 'loading'
