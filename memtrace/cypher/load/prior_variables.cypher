// Variables of a timeline by id.
// params: $trace_id, $ids
// returns: id, name, version, value, category, class_name
UNWIND $ids AS id
MATCH (v:Variable {trace_id: $trace_id, id: id})
RETURN v.id AS id, v.name AS name, v.version AS version, v.value AS value,
       v.category AS category, v.class_name AS class_name
