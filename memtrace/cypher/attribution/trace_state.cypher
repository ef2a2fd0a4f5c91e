// The load state of one trace ('complete', 'loading'), to refuse work on a missing or partial one, and the system it was written with (what its confidences are calibrated on).
// params: $trace_id
// returns: load_state, system
MATCH (t:Trace {id: $trace_id})
RETURN t.load_state AS load_state, t.system AS system
