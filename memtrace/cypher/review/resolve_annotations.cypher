// Resolve imported annotations' ids: graph (trace), query (case), op and edge, each null where it does not resolve.
// params: $rows
// returns: index, trace_id, case_id, op_id, edge_found, answer_op
// row: {index, graph_id, query_id, op_id, edge_id}; answer_op: the op that answered the case
// (where an annotation-only label without an op is attached).
UNWIND $rows AS row
OPTIONAL MATCH (t:Trace {id: row.graph_id})
WHERE t.load_state = 'complete'
OPTIONAL MATCH (t)-[:HAS_CASE]->(c:Case)-[:QUERY]->(:Variable {id: row.query_id})
OPTIONAL MATCH (o:Operation {trace_id: t.id, id: row.op_id})
CALL (t, row) {
  OPTIONAL MATCH (:Variable {trace_id: t.id})-[f:FLOWS_TO {edge_id: row.edge_id}]->()
  RETURN count(f) > 0 AS edge_found
}
CALL (c) {
  OPTIONAL MATCH (c)-[:QUERY]->(:Variable)<-[:READS]-(answer:Operation {kind: 'generation'})
  WITH answer ORDER BY answer.seq
  RETURN head(collect(answer.id)) AS answer_op
}
RETURN row.index AS index, t.id AS trace_id, c.id AS case_id, o.id AS op_id, edge_found,
       answer_op
ORDER BY index
