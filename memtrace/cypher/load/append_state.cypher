// What an append to a trace starts from: whether the trace exists, its next free seq (null: not made by appends), and which of these span ids it already holds as operations (a re-sent request is not appended twice).
// params: $trace_id, $ids
// returns: exists, next_seq, known
OPTIONAL MATCH (t:Trace {id: $trace_id})
CALL () {
  UNWIND $ids AS id
  MATCH (o:Operation {trace_id: $trace_id, id: id})
  RETURN collect(o.id) AS known
}
RETURN t IS NOT NULL AS exists, t.next_seq AS next_seq, known
