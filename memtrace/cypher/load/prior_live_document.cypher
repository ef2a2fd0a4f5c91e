// Per text digest: the latest live memory (its newest version, not deleted) of the timeline holding that exact text.
// params: $trace_id, $keys
// returns: key, id, name, version, value, category, class_name
UNWIND $keys AS key
CALL (key) {
  MATCH (v:Variable {trace_id: $trace_id, text_key: key})
  USING INDEX SEEK v:Variable(trace_id, text_key, seq)
  WHERE v.seq IS NOT NULL AND v.category = 'memory_entry'
    AND NOT EXISTS { (v)-[:NEXT_VERSION]->(:Variable) }
    AND NOT EXISTS { (v)<-[:DELETES]-(:Operation) }
  RETURN v ORDER BY v.seq DESC LIMIT 1
}
RETURN key, v.id AS id, v.name AS name, v.version AS version, v.value AS value,
       v.category AS category, v.class_name AS class_name
