// Per text digest: the earliest message variable of the timeline holding that exact text (a case's evidence said in an earlier request).
// params: $trace_id, $keys
// returns: key, id, name, version, value, category, class_name
UNWIND $keys AS key
CALL (key) {
  MATCH (v:Variable {trace_id: $trace_id, text_key: key})
  USING INDEX SEEK v:Variable(trace_id, text_key, seq)
  WHERE v.seq IS NOT NULL AND v.category = 'message'
  RETURN v ORDER BY v.seq LIMIT 1
}
RETURN key, v.id AS id, v.name AS name, v.version AS version, v.value AS value,
       v.category AS category, v.class_name AS class_name
