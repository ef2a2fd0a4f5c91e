// Record how an optimization run ended: accuracies before and after, budget, why it stopped.
// params: $run_id, $props
// returns: run_id
// In Neo4j Browser: :params {run_id: 'opt-demo', props: {initial_heldout: 0.28, final_heldout: 0.37}}
MATCH (r:OptimizationRun {id: $run_id})
SET r += $props, r.updated_at = datetime()
RETURN r.id AS run_id
