// Create the variables of a freshly cleared trace (the (trace_id, id) constraint forbids duplicates).
// params: $trace_id, $rows
// returns: -
UNWIND $rows AS row
CREATE (v:Variable {trace_id: $trace_id, id: row.id})
SET v += row.props
