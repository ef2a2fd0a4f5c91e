// The load state of one trace before a load, and its node count: null (new), 'loading' (interrupted) or 'complete' (kept until a re-load swaps).
// params: $trace_id
// returns: load_state, nodes
MATCH (t:Trace {id: $trace_id})
RETURN t.load_state AS load_state,
       coalesce(t.n_sessions, 0) + coalesce(t.n_operations, 0) + coalesce(t.n_variables, 0)
         + coalesce(t.n_cases, 0) AS nodes
