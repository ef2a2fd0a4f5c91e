// Neo4j Browser view of a case: the trails from the messages the judge started from (its gold evidence, or the messages --evidence retrieved found) up to the answer, the answer op, the verdict.
// params: $trace_id, $case_id, $message_ids, $max_seq
// returns: c, trail, answer, a, blamed
MATCH (c:Case {trace_id: $trace_id, id: $case_id})
MATCH (m:Variable {trace_id: $trace_id})
WHERE m.id IN $message_ids
OPTIONAL MATCH trail = (m)-[:FLOWS_TO]->{1,12}(x:Variable)
WHERE x.seq <= $max_seq AND all(n IN nodes(trail)[1..-1] WHERE n.seq >= m.seq)
OPTIONAL MATCH (c)-[:QUERY]->(:Variable)<-[:READS]-(answer:Operation {kind: 'generation'})
OPTIONAL MATCH (c)-[:HAS_ATTRIBUTION]->(a:Attribution)-[:BLAMES]->(blamed:Operation)
RETURN c, trail, answer, a, blamed
LIMIT 300
