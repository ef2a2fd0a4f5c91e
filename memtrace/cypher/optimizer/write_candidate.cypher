// Record one candidate: a new version per changed variable, derived from the incumbent's version.
// params: $run_id, $candidate, $changes
// returns: written
// In Neo4j Browser: :params {run_id: 'opt-demo', candidate: {id: 'r1-c1', round: 1, score_train: 0.3, score_heldout: 0.28, accepted: false, reason: 'held-out dropped'}, changes: [{kind: 'parameter', name: 'top_k', version: 2, parent: 1, value: '12', classes: []}]}
MATCH (r:OptimizationRun {id: $run_id})
UNWIND $changes AS change
MATCH (parent:ConfigVersion {run_id: $run_id, name: change.name, version: change.parent})
MERGE (v:ConfigVersion {run_id: $run_id, name: change.name, version: change.version})
SET v.kind = change.kind, v.value = change.value, v.candidate = $candidate.id
FOREACH (_ IN CASE change.kind WHEN 'prompt' THEN [1] ELSE [] END | SET v:PromptVersion)
FOREACH (_ IN CASE change.kind WHEN 'parameter' THEN [1] ELSE [] END | SET v:ParameterVersion)
MERGE (v)-[d:DERIVED_FROM]->(parent)
SET d.round = $candidate.round, d.candidate = $candidate.id,
    d.score_train = $candidate.score_train, d.score_heldout = $candidate.score_heldout,
    d.accepted = $candidate.accepted, d.reason = $candidate.reason
MERGE (v)-[:PROPOSED_IN]->(r)
WITH v, change
CALL (v, change) {
  UNWIND change.classes AS key
  MATCH (c:FailureClass {run_id: $run_id, round: $candidate.round, key: key})
  MERGE (v)-[:MOTIVATED_BY]->(c)
}
RETURN count(v) AS written
