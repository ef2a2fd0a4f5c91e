// Create the sessions, variables, operations and cases of new traces in one statement (each row: its trace, label, record number and id, properties); return [trace number, record number, element id] per node.
// params: $rows
// returns: ids
UNWIND $rows AS row
CALL (row) {
  WITH row WHERE row.label = 'Session'
  MATCH (t:Trace {id: row.trace_id})
  CREATE (t)-[:HAS_SESSION]->(n:Session {trace_id: row.trace_id, id: row.id})
  SET n += row.props
  RETURN n
UNION
  WITH row WHERE row.label = 'Variable'
  CREATE (n:Variable {trace_id: row.trace_id, id: row.id})
  SET n += row.props
  RETURN n
UNION
  WITH row WHERE row.label = 'Operation'
  CREATE (n:Operation {trace_id: row.trace_id, id: row.id})
  SET n += row.props
  RETURN n
UNION
  WITH row WHERE row.label = 'Case'
  MATCH (t:Trace {id: row.trace_id})
  CREATE (t)-[:HAS_CASE]->(n:Case {trace_id: row.trace_id, id: row.id})
  SET n += row.props
  RETURN n
}
RETURN collect([row.trace, row.n, elementId(n)]) AS ids
