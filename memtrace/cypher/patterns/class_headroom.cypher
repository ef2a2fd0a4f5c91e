// What fixing each failure class of an attribution run would buy (executed headroom), largest net headroom first.
// params: $run_id
// returns: net, rescued, also_rescued, broken, cases, accuracy_delta, fix_alone_share, fix_alone, op_name, error_type, system, replayable, replays, why, joint_net, joint_keys, computed_at, key
// In Neo4j Browser: :params {run_id: 'demo'}
// Written by `memtrace patterns --what-if`; rescued / broken count answers after replaying the
// affected conversations with every blamed operation of the class repaired. The numbers come
// first and rounded (a Browser table shows the left columns), the long class key last.
MATCH (w:WhatIf {run_id: $run_id})-[:HAS_CLASS]->(c:FailureClass)
RETURN c.net AS net, c.rescued AS rescued, c.also_rescued AS also_rescued, c.broken AS broken,
       c.cases AS cases, round(c.accuracy_delta, 4) AS accuracy_delta,
       round(c.fix_alone_share, 3) AS fix_alone_share, c.fix_alone AS fix_alone,
       c.op_name AS op_name, c.error_type AS error_type, c.system AS system,
       c.replayable AS replayable, c.replays AS replays, c.why AS why, w.joint_net AS joint_net,
       w.joint_keys AS joint_keys, toString(w.computed_at) AS computed_at, c.key AS key
ORDER BY coalesce(c.net, -1000000000) DESC, c.cases DESC, c.key
