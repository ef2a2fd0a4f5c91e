// Per text digest: the latest variable of the timeline holding that exact text (the one that carries latest_text_key).
// params: $trace_id, $keys
// returns: key, id, name, version, value, category, class_name
UNWIND $keys AS key
MATCH (v:Variable {trace_id: $trace_id, latest_text_key: key})
USING INDEX SEEK v:Variable(trace_id, latest_text_key)
RETURN key, v.id AS id, v.name AS name, v.version AS version, v.value AS value,
       v.category AS category, v.class_name AS class_name
