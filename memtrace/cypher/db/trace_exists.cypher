// Whether a trace node exists.
// params: $trace_id
// returns: exists
RETURN EXISTS { MATCH (:Trace {id: $trace_id}) } AS exists
