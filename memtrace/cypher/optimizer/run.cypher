// One optimization run's properties (system, mode, accuracies before and after, budget).
// params: $run_id
// returns: run
// In Neo4j Browser: :params {run_id: 'opt-demo'}
MATCH (r:OptimizationRun {id: $run_id})
RETURN properties(r) AS run
