// Move up to $limit nodes of one copy of a trace (variables, operations, cases, sessions) to another trace id; repeat until fewer than $limit.
// params: $from_id, $to_id, $limit
// returns: moved
// In the swap transaction of a re-load (see swap_trace.cypher) one call moves a whole copy.
CALL () {
  MATCH (n:Variable {trace_id: $from_id}) RETURN n
  UNION ALL
  MATCH (n:Operation {trace_id: $from_id}) RETURN n
  UNION ALL
  MATCH (n:Case {trace_id: $from_id}) RETURN n
  UNION ALL
  MATCH (n:Session {trace_id: $from_id}) RETURN n
}
WITH n LIMIT $limit
SET n.trace_id = $to_id
RETURN count(*) AS moved
