// Memory-store variables of a trace with their fate: creator, next version, deletion.
// params: $trace_id
// returns: id, name, version, seq, value, creator_op, creator_kind, creator_seq, next_id, next_seq, next_creator_op, next_creator_kind, next_creator_seq, deleted_by, deleted_by_kind, deleted_seq
// A memory category is one whose variables are written by a storing op (embedding/update, or
// extraction: naive RAG's chunker creates its memory units) and served by a retrieval op (read
// or written by it); contexts and raw LLM responses are not.
CALL () {
  MATCH (:Operation {trace_id: $trace_id, kind: 'retrieval'})-[:READS|WRITES]->(v:Variable)
  WHERE coalesce(v.category, '') <> 'prompt'
    AND EXISTS {
      (v)<-[:WRITES]-(s:Operation) WHERE s.kind IN ['embedding', 'update', 'extraction']
    }
  RETURN collect(DISTINCT v.category) AS categories
}
MATCH (m:Variable {trace_id: $trace_id})
WHERE m.category IN categories AND NOT coalesce(m.is_marker, false)
CALL (m) {
  OPTIONAL MATCH (m)<-[:WRITES]-(w:Operation)
  WHERE w.kind <> 'retrieval'
  WITH w ORDER BY w.seq
  RETURN head(collect(w)) AS creator
}
CALL (m) {
  OPTIONAL MATCH (m)-[:NEXT_VERSION]->(n:Variable)
  OPTIONAL MATCH (n)<-[:WRITES]-(nw:Operation)
  WHERE nw.kind <> 'retrieval'
  WITH n, nw ORDER BY nw.seq
  RETURN n, head(collect(nw)) AS next_creator
}
CALL (m) {
  OPTIONAL MATCH (m)<-[:DELETES]-(d:Operation)
  WITH d ORDER BY d.seq
  RETURN head(collect(d)) AS deleter
}
RETURN m.id AS id, m.name AS name, m.version AS version, m.seq AS seq, m.value AS value,
       creator.id AS creator_op, creator.kind AS creator_kind, creator.seq AS creator_seq,
       n.id AS next_id, n.seq AS next_seq, next_creator.id AS next_creator_op,
       next_creator.kind AS next_creator_kind,
       next_creator.seq AS next_creator_seq, deleter.id AS deleted_by,
       deleter.kind AS deleted_by_kind, deleter.seq AS deleted_seq
ORDER BY m.seq
