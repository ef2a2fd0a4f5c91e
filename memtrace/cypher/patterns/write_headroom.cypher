// Store the executed what-if of an attribution run: one :WhatIf node, one :FailureClass per class with its headroom.
// params: $run_id, $props, $classes
// returns: written
// In Neo4j Browser: :params {run_id: 'demo', props: {joint_keys: [], joint_rescued: 0, replays: 0}, classes: [{key: 'mem0/memory_system.extract_facts/ExtractionError/', props: {cases: 2, rescued: 1}}]}
// A new computation replaces the previous one's classes (the class set may have changed).
MERGE (w:WhatIf {run_id: $run_id})
SET w = $props, w.run_id = $run_id, w.computed_at = datetime()
WITH w
OPTIONAL MATCH (w)-[:HAS_CLASS]->(old:FailureClass)
DETACH DELETE old
WITH DISTINCT w
UNWIND $classes AS cls
CREATE (c:FailureClass {attribution_run: $run_id, key: cls.key})
SET c += cls.props
CREATE (w)-[:HAS_CLASS]->(c)
RETURN count(c) AS written
