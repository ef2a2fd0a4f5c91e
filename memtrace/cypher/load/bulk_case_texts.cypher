// After a bulk import: what create_case_links does besides linking (texts copied from the query and prediction variables), and the empty golden_answers lists CSV cannot carry.
// params: -
// returns: cases
MATCH (c:Case)
SET c.golden_answers = coalesce(c.golden_answers, [])
WITH c
OPTIONAL MATCH (c)-[:QUERY]->(q:Variable)
SET c.query = coalesce(c.query, q.value)
WITH c
OPTIONAL MATCH (c)-[:PREDICTION]->(p:Variable)
SET c.prediction = coalesce(c.prediction, p.value)
RETURN count(c) AS cases
