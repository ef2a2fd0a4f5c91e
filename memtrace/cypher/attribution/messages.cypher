// Message variables of a trace (the corpus for retrieved starting evidence), questions excluded.
// params: $trace_id
// returns: id, value, seq
MATCH (v:Variable {trace_id: $trace_id, category: 'message'})
RETURN v.id AS id, v.value AS value, v.seq AS seq
ORDER BY v.seq
