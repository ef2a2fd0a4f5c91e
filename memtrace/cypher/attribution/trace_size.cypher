// Characters of every value, name and id in a trace: the size of the whole flattened trace.
// params: $trace_id
// returns: chars, operations, variables
MATCH (t:Trace {id: $trace_id})
CALL (t) {
  MATCH (v:Variable {trace_id: t.id})
  RETURN sum(size(coalesce(v.value, '')) + size(v.id) + size(coalesce(v.category, ''))) AS vchars,
         count(v) AS variables
}
CALL (t) {
  MATCH (o:Operation {trace_id: t.id})
  RETURN sum(size(o.id) + size(coalesce(o.name, '')) + 40) AS ochars, count(o) AS operations
}
RETURN vchars + ochars AS chars, operations, variables
