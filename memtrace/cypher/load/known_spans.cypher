// Which of these span ids a timeline already holds as operations (a re-sent request is not appended twice).
// params: $trace_id, $ids
// returns: id
UNWIND $ids AS id
MATCH (o:Operation {trace_id: $trace_id, id: id})
RETURN o.id AS id
