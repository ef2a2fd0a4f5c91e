// Create the variables of a freshly cleared trace (the (trace_id, id) constraint forbids duplicates); return their element ids.
// params: $trace_id, $rows
// returns: ids
UNWIND $rows AS row
CREATE (v:Variable {trace_id: $trace_id, id: row.id})
SET v += row.props
RETURN collect([row.n, elementId(v)]) AS ids
