// Delete an optimization run with its versions and failure classes (not the traces it ran).
// params: $run_id
// returns: deleted
// In Neo4j Browser: :params {run_id: 'opt-demo'}
MATCH (r:OptimizationRun {id: $run_id})
OPTIONAL MATCH (r)-[:STARTS_FROM|FOUND|PROPOSED_IN]-(n)
WITH r, collect(DISTINCT n) AS nodes
FOREACH (n IN nodes | DETACH DELETE n)
DETACH DELETE r
RETURN size(nodes) + 1 AS deleted
