// Create the operations of a freshly cleared trace (the (trace_id, id) constraint forbids duplicates).
// params: $trace_id, $rows
// returns: -
UNWIND $rows AS row
CREATE (o:Operation {trace_id: $trace_id, id: row.id})
SET o += row.props
