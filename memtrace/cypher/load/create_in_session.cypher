// Link operations to their session.
// params: $trace_id, $rows
// returns: -
UNWIND $rows AS row
MATCH (o:Operation {trace_id: $trace_id, id: row.op})
MATCH (s:Session {trace_id: $trace_id, id: row.session})
MERGE (o)-[:IN_SESSION]->(s)
