// The live memories of one store in a timeline (names starting with the store's prefix; their newest version not deleted): what a store deletion deletes.
// params: $trace_id, $prefix
// returns: name
MATCH (v:Variable {trace_id: $trace_id})
USING INDEX SEEK v:Variable(trace_id, name, version)
WHERE v.name STARTS WITH $prefix AND v.version IS NOT NULL AND v.category = 'memory_entry'
  AND NOT EXISTS { (v)-[:NEXT_VERSION]->(:Variable) }
  AND NOT EXISTS { (v)<-[:DELETES]-(:Operation) }
RETURN DISTINCT v.name AS name
