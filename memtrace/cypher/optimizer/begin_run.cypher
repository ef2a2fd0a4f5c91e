// Create or resume an optimization run; its base configuration is version 1 of every variable.
// params: $run_id, $props, $base
// returns: run_id
// In Neo4j Browser: :params {run_id: 'opt-demo', props: {system: 'mem0'}, base: [{kind: 'parameter', name: 'top_k', value: '10'}]}
MERGE (r:OptimizationRun {id: $run_id})
SET r += $props, r.updated_at = datetime()
WITH r
UNWIND $base AS item
MERGE (v:ConfigVersion {run_id: $run_id, name: item.name, version: 1})
SET v.kind = item.kind, v.value = item.value
FOREACH (_ IN CASE item.kind WHEN 'prompt' THEN [1] ELSE [] END | SET v:PromptVersion)
FOREACH (_ IN CASE item.kind WHEN 'parameter' THEN [1] ELSE [] END | SET v:ParameterVersion)
MERGE (r)-[:STARTS_FROM]->(v)
RETURN DISTINCT r.id AS run_id
