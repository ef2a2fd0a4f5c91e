// Mark a trace (or the staged copy of a re-load) as being written, replacing its properties; the load marker for crash safety.
// params: $trace_id, $props, $state
// returns: -
MERGE (t:Trace {id: $trace_id})
SET t = $props, t.id = $trace_id, t.load_state = $state, t.loaded_at = datetime()
