// Per memory name: its latest version in the timeline and whether an operation deleted it.
// params: $trace_id, $names
// returns: name, id, version, value, category, class_name, deleted
UNWIND $names AS name
CALL (name) {
  MATCH (v:Variable {trace_id: $trace_id, name: name})
  USING INDEX SEEK v:Variable(trace_id, name, version)
  WHERE v.version IS NOT NULL AND v.category = 'memory_entry'
  RETURN v ORDER BY v.version DESC LIMIT 1
}
RETURN name, v.id AS id, v.version AS version, v.value AS value, v.category AS category,
       v.class_name AS class_name, EXISTS { (v)<-[:DELETES]-(:Operation) } AS deleted
