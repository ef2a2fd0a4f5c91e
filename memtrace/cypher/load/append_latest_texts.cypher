// Append step (before the nodes): the variables that held these texts last stop being their latest holders (the append's new variables take latest_text_key over).
// params: $trace_id, $rows
// returns: superseded
UNWIND $rows AS row
MATCH (v:Variable {trace_id: $trace_id, latest_text_key: row.key})
USING INDEX SEEK v:Variable(trace_id, latest_text_key)
REMOVE v.latest_text_key
RETURN count(v) AS superseded
