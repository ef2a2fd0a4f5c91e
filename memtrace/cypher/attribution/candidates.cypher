// Candidate operations: on an evidence trail AND an ancestor of the answer op, in execution order.
// params: $trace_id, $answer_op, $evidence_ids
// returns: op_id, name, kind, seq
MATCH (a:Operation {trace_id: $trace_id, id: $answer_op})
MATCH (a)-[:DEPENDS_ON]->{0,}(o:Operation)
WHERE EXISTS {
  UNWIND $evidence_ids AS message_id
  MATCH (:Variable {trace_id: $trace_id, id: message_id})<-[:READS]-(first:Operation)
  MATCH (o)-[:DEPENDS_ON]->{0,}(first)
}
RETURN DISTINCT o.id AS op_id, o.name AS name, o.kind AS kind, o.seq AS seq
ORDER BY seq
