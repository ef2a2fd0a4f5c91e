// Characters of every value, name and id per trace: the size of each whole flattened trace.
// params: $trace_ids
// returns: trace_id, chars, operations, variables
UNWIND $trace_ids AS trace_id
MATCH (t:Trace {id: trace_id})
CALL (t) {
  MATCH (v:Variable {trace_id: t.id})
  RETURN sum(size(coalesce(v.value, '')) + size(v.id) + size(coalesce(v.category, ''))) AS vchars,
         count(v) AS variables
}
CALL (t) {
  MATCH (o:Operation {trace_id: t.id})
  RETURN sum(size(o.id) + size(coalesce(o.name, '')) + 40) AS ochars, count(o) AS operations
}
RETURN t.id AS trace_id, vchars + ochars AS chars, operations, variables
