// Create the operations of several new traces in one statement (each row names its trace and its trace's number in the statement) and return [trace number, record number, element id] per node.
// params: $rows
// returns: ids
// the form of create_operations for write_new_traces: the trace id travels in each row
UNWIND $rows AS row
CREATE (n:Operation {trace_id: row.trace_id, id: row.id})
SET n += row.props
RETURN collect([row.trace, row.n, elementId(n)]) AS ids
