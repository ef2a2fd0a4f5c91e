// What an append to a trace starts from: whether it exists, whether appends made it (next_seq is set), its load state.
// params: $trace_id
// returns: load_state, next_seq
MATCH (t:Trace {id: $trace_id})
RETURN t.load_state AS load_state, t.next_seq AS next_seq
