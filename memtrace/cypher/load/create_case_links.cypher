// Link cases to their query and prediction variables and fill in the texts from the values.
// params: $trace_id, $rows
// returns: -
UNWIND $rows AS row
MATCH (c:Case {trace_id: $trace_id, id: row.id})
MATCH (q:Variable {trace_id: $trace_id, id: row.query})
CREATE (c)-[:QUERY]->(q)
SET c.query = coalesce(c.query, q.value)
WITH c, row
OPTIONAL MATCH (p:Variable {trace_id: $trace_id, id: row.prediction})
FOREACH (_ IN CASE WHEN p IS NULL THEN [] ELSE [1] END |
  CREATE (c)-[:PREDICTION]->(p)
  SET c.prediction = coalesce(c.prediction, p.value)
)
