// Append step: the new requests' sessions, variables, operations and cases of a timeline (each row: a label, the record id, its properties).
// params: $trace_id, $rows
// returns: created
MATCH (t:Trace {id: $trace_id})
UNWIND $rows AS row
CALL (t, row) {
  WITH t, row WHERE row.label = 'Session'
  CREATE (t)-[:HAS_SESSION]->(n:Session {trace_id: $trace_id, id: row.id})
  SET n += row.props
  RETURN n
UNION
  WITH t, row WHERE row.label = 'Variable'
  CREATE (n:Variable {trace_id: $trace_id, id: row.id})
  SET n += row.props
  RETURN n
UNION
  WITH t, row WHERE row.label = 'Operation'
  CREATE (n:Operation {trace_id: $trace_id, id: row.id})
  SET n += row.props
  RETURN n
UNION
  WITH t, row WHERE row.label = 'Case'
  CREATE (t)-[:HAS_CASE]->(n:Case {trace_id: $trace_id, id: row.id})
  SET n += row.props
  RETURN n
}
RETURN count(n) AS created
