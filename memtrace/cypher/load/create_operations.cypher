// Create the operations of a freshly cleared trace (the (trace_id, id) constraint forbids duplicates); return their element ids.
// params: $trace_id, $rows
// returns: ids
UNWIND $rows AS row
CREATE (o:Operation {trace_id: $trace_id, id: row.id})
SET o += row.props
RETURN collect([row.n, elementId(o)]) AS ids
