// Benchmark / human labels: the case blames one operation with an error type (endpoints by element id).
// params: $rows
// returns: -
UNWIND $rows AS row
MATCH (c:Case) WHERE elementId(c) = row.case
MATCH (o:Operation) WHERE elementId(o) = row.op
CREATE (c)-[l:LABELED]->(o)
SET l = row.props
