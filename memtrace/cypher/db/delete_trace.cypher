// Delete the trace node itself (after its nodes are gone).
// params: $trace_id
// returns: deleted
MATCH (t:Trace {id: $trace_id})
DETACH DELETE t
RETURN count(*) AS deleted
