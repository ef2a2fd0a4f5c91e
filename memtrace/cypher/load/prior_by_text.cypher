// Per text digest: the latest variable of the timeline holding that exact text (index-backed: the newest by seq first).
// params: $trace_id, $keys
// returns: key, id, name, version, value, category, class_name
UNWIND $keys AS key
CALL (key) {
  MATCH (v:Variable {trace_id: $trace_id, text_key: key})
  RETURN v ORDER BY v.seq DESC LIMIT 1
}
RETURN key, v.id AS id, v.name AS name, v.version AS version, v.value AS value,
       v.category AS category, v.class_name AS class_name
