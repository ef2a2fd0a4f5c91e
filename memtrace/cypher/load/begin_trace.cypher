// Mark a trace as being loaded (replacing its properties); the load marker for crash safety.
// params: $trace_id, $props
// returns: -
MERGE (t:Trace {id: $trace_id})
SET t = $props, t.id = $trace_id, t.load_state = 'loading', t.loaded_at = datetime()
