// The answer's context: every variable the answer operation reads, except the question and prompts.
// params: $trace_id, $answer_op, $query_id
// returns: id, value
MATCH (a:Operation {trace_id: $trace_id, id: $answer_op})-[:READS]->(v:Variable)
WHERE v.id <> $query_id AND coalesce(v.category, '') <> 'prompt'
RETURN v.id AS id, v.value AS value
ORDER BY v.seq
