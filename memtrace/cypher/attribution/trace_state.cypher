// The load state of one trace ('complete', 'loading'), to refuse work on a missing or partial one.
// params: $trace_id
// returns: load_state
MATCH (t:Trace {id: $trace_id})
RETURN t.load_state AS load_state
