// Append step: each new version of a variable follows the latest earlier version of the same (class_name, name), from this append or an earlier one.
// params: $trace_id, $rows
// returns: linked
UNWIND $rows AS row
MATCH (newer:Variable {trace_id: $trace_id, id: row.id})
CALL (newer, row) {
  MATCH (older:Variable {trace_id: $trace_id, name: row.name})
  USING INDEX SEEK older:Variable(trace_id, name, version)
  WHERE older.version < row.version AND coalesce(older.class_name, '') = coalesce(row.class_name, '')
  RETURN older ORDER BY older.version DESC LIMIT 1
}
CREATE (older)-[:NEXT_VERSION]->(newer)
RETURN count(*) AS linked
