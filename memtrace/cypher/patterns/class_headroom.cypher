// What fixing each failure class of an attribution run would buy (executed headroom), largest net headroom first.
// params: $run_id
// returns: key, system, op_name, error_type, cases, replayable, rescued, also_rescued, broken, net, accuracy_delta, fix_alone, fix_alone_share, replays, why, joint_keys, joint_net, computed_at
// In Neo4j Browser: :params {run_id: 'demo'}
// Written by `memtrace patterns --what-if`; rescued / broken count answers after replaying the
// affected conversations with every blamed operation of the class repaired.
MATCH (w:WhatIf {run_id: $run_id})-[:HAS_CLASS]->(c:FailureClass)
RETURN c.key AS key, c.system AS system, c.op_name AS op_name, c.error_type AS error_type,
       c.cases AS cases, c.replayable AS replayable, c.rescued AS rescued,
       c.also_rescued AS also_rescued, c.broken AS broken, c.net AS net,
       c.accuracy_delta AS accuracy_delta, c.fix_alone AS fix_alone,
       c.fix_alone_share AS fix_alone_share, c.replays AS replays, c.why AS why,
       w.joint_keys AS joint_keys, w.joint_net AS joint_net, toString(w.computed_at) AS computed_at
ORDER BY coalesce(c.net, -1000000000) DESC, c.cases DESC, c.key
