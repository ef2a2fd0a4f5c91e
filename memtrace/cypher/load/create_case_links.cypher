// Link cases to their query and prediction variables (by element id) and fill in the texts from the values.
// params: $rows
// returns: -
UNWIND $rows AS row
MATCH (c:Case) WHERE elementId(c) = row.id
MATCH (q:Variable) WHERE elementId(q) = row.query
CREATE (c)-[:QUERY]->(q)
SET c.query = coalesce(c.query, q.value)
WITH c, row
OPTIONAL MATCH (p:Variable) WHERE elementId(p) = row.prediction
FOREACH (_ IN CASE WHEN p IS NULL THEN [] ELSE [1] END |
  CREATE (c)-[:PREDICTION]->(p)
  SET c.prediction = coalesce(c.prediction, p.value)
)
