// Values of the given variables of one trace.
// params: $trace_id, $ids
// returns: id, value, seq
UNWIND $ids AS id
MATCH (v:Variable {trace_id: $trace_id, id: id})
RETURN v.id AS id, v.value AS value, v.seq AS seq
