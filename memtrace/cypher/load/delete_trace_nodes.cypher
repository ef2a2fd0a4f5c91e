// Delete up to $limit nodes of one trace (attributions, reviews, variables, operations, cases, sessions); repeat until 0.
// params: $trace_id, $limit
// returns: deleted
CALL () {
  MATCH (n:Attribution {trace_id: $trace_id}) RETURN n
  UNION ALL
  MATCH (n:Review {trace_id: $trace_id}) RETURN n
  UNION ALL
  MATCH (n:Variable {trace_id: $trace_id}) RETURN n
  UNION ALL
  MATCH (n:Operation {trace_id: $trace_id}) RETURN n
  UNION ALL
  MATCH (n:Case {trace_id: $trace_id}) RETURN n
  UNION ALL
  MATCH (n:Session {trace_id: $trace_id}) RETURN n
}
WITH n LIMIT $limit
DETACH DELETE n
RETURN count(*) AS deleted
