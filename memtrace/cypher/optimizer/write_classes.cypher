// Record the failure classes one round of an optimization run routed (and why others were not).
// params: $run_id, $round, $classes
// returns: written
// In Neo4j Browser: :params {run_id: 'opt-demo', round: 1, classes: []}
MATCH (r:OptimizationRun {id: $run_id})
UNWIND $classes AS cls
MERGE (c:FailureClass {run_id: $run_id, round: $round, key: cls.key})
SET c += cls.props
MERGE (r)-[:FOUND {round: $round}]->(c)
RETURN count(c) AS written
