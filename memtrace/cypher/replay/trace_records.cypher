// What a replay re-runs from, of one complete trace: its source, metadata, sessions, the message, query, parameter and prompt variables, operations (name, kind, category, written variables, the questions read, metadata: a recorded model call or a replay step) and cases.
// params: $trace_id
// returns: source, system, metadata, sessions, variables, operations, cases
MATCH (t:Trace {id: $trace_id})
WHERE t.load_state = 'complete'
CALL (t) {
  OPTIONAL MATCH (t)-[:HAS_SESSION]->(s:Session)
  RETURN collect({id: s.id, name: s.name, metadata: s.metadata}) AS sessions
}
CALL (t) {
  OPTIONAL MATCH (v:Variable {trace_id: t.id})
  WHERE v.category IN ['message', 'parameter', 'prompt'] OR v.class_name = 'query'
  RETURN collect({id: v.id, name: v.name, category: v.category, class_name: v.class_name,
                  value: v.value, seq: v.seq, session: v.session, metadata: v.metadata}) AS variables
}
CALL (t) {
  OPTIONAL MATCH (o:Operation {trace_id: t.id})
  CALL (o) {
    OPTIONAL MATCH (o)-[:WRITES]->(w:Variable)
    RETURN collect(w.id) AS writes
  }
  // the questions it reads: a case's answer op reads its question (hook.answer_ops)
  CALL (o) {
    OPTIONAL MATCH (o)-[:READS]->(q:Variable {class_name: 'query'})
    RETURN collect(q.id) AS reads
  }
  RETURN collect({id: o.id, name: o.name, kind: o.kind, category: o.category, writes: writes,
                  reads: reads, metadata: o.metadata}) AS operations
}
CALL (t) {
  OPTIONAL MATCH (t)-[:HAS_CASE]->(c:Case)
  RETURN collect({id: c.id, query: c.query_id, prediction_text: c.prediction,
                  golden_answers: c.golden_answers, judge_score: c.judge_score, failed: c.failed,
                  category: c.category, missing_evidence: c.missing_evidence}) AS cases
}
RETURN t.source AS source, t.system AS system, t.metadata AS metadata, sessions, variables,
       operations, cases
