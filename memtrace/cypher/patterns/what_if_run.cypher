// The run-level figures of an attribution run's executed what-if: joint headroom of the top classes, replays, traces that could not be replayed.
// params: $run_id
// returns: run
// In Neo4j Browser: :params {run_id: 'demo'}
MATCH (w:WhatIf {run_id: $run_id})
RETURN properties(w) AS run
