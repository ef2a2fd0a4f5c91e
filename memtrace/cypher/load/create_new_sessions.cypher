// Create the sessions of several new traces in one statement (each row names its trace and its trace's number in the statement) and return [trace number, record number, element id] per node.
// params: $rows
// returns: ids
// the form of create_sessions for write_new_traces: the trace id travels in each row
UNWIND $rows AS row
MATCH (t:Trace {id: row.trace_id})
CREATE (t)-[:HAS_SESSION]->(n:Session {trace_id: row.trace_id, id: row.id})
SET n += row.props
RETURN collect([row.trace, row.n, elementId(n)]) AS ids
