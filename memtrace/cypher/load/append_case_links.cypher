// Append step: each new case's question, answer, evidence and labels (variables and operations by id, from any request of the timeline); the texts come from the variables as in a whole load.
// params: $trace_id, $rows
// returns: linked
UNWIND $rows AS row
MATCH (c:Case {trace_id: $trace_id, id: row.id})
MATCH (q:Variable {trace_id: $trace_id, id: row.query})
CREATE (c)-[:QUERY]->(q)
SET c.query = coalesce(c.query, q.value)
WITH c, row
CALL (c, row) {
  MATCH (p:Variable {trace_id: $trace_id, id: row.prediction})
  CREATE (c)-[:PREDICTION]->(p)
  SET c.prediction = coalesce(c.prediction, p.value)
}
CALL (c, row) {
  UNWIND row.evidence AS var
  MATCH (v:Variable {trace_id: $trace_id, id: var})
  CREATE (c)-[:EVIDENCE]->(v)
}
CALL (c, row) {
  UNWIND row.labels AS label
  MATCH (o:Operation {trace_id: $trace_id, id: label.op})
  CREATE (c)-[l:LABELED]->(o)
  SET l = label.props
}
RETURN count(c) AS linked
