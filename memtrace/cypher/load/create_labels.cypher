// Benchmark / human labels: the case blames one operation with an error type.
// params: $trace_id, $rows
// returns: -
UNWIND $rows AS row
MATCH (c:Case {trace_id: $trace_id, id: row.case})
MATCH (o:Operation {trace_id: $trace_id, id: row.op})
CREATE (c)-[l:LABELED]->(o)
SET l = row.props
