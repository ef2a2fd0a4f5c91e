// Which of these case ids a timeline already holds.
// params: $trace_id, $ids
// returns: id
UNWIND $ids AS id
MATCH (c:Case {trace_id: $trace_id, id: id})
RETURN c.id AS id
