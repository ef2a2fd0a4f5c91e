// The lineage of an optimization run: every proposed version, its parent, scores and motivation.
// params: $run_id
// returns: kind, name, version, parent, value, round, candidate, score_train, score_heldout, accepted, reason, classes
// In Neo4j Browser: :params {run_id: 'opt-demo'}
MATCH (:OptimizationRun {id: $run_id})<-[:PROPOSED_IN]-(v:ConfigVersion)-[d:DERIVED_FROM]->(p:ConfigVersion)
OPTIONAL MATCH (v)-[:MOTIVATED_BY]->(c:FailureClass)
WITH v, d, p, collect(c.key) AS classes
RETURN v.kind AS kind, v.name AS name, v.version AS version, p.version AS parent,
       v.value AS value, d.round AS round, d.candidate AS candidate,
       d.score_train AS score_train, d.score_heldout AS score_heldout, d.accepted AS accepted,
       d.reason AS reason, classes
ORDER BY round, candidate, name
