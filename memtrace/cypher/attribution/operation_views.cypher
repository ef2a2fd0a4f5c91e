// Operations with their inputs and outputs, values cut to $budget characters each (judge view).
// params: $trace_id, $op_ids, $budget
// returns: id, name, kind, seq, inputs, outputs, deletes
// inputs / outputs: {id, name, version, class_name, category, value} maps in write order
UNWIND $op_ids AS op_id
MATCH (o:Operation {trace_id: $trace_id, id: op_id})
CALL (o) {
  OPTIONAL MATCH (o)-[:READS]->(v:Variable)
  WITH v ORDER BY v.seq
  RETURN collect(v {.id, .name, .version, .class_name, .category, value: left(coalesce(v.value, ''), $budget)}) AS inputs
}
CALL (o) {
  OPTIONAL MATCH (o)-[:WRITES]->(v:Variable)
  WITH v ORDER BY v.seq
  RETURN collect(v {.id, .name, .version, .class_name, .category, value: left(coalesce(v.value, ''), $budget)}) AS outputs
}
CALL (o) {
  OPTIONAL MATCH (o)-[:DELETES]->(v:Variable)
  RETURN collect(v.id) AS deletes
}
RETURN o.id AS id, o.name AS name, o.kind AS kind, o.seq AS seq, inputs, outputs, deletes
