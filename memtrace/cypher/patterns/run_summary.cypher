// Headline numbers of one attribution run per system: cases, failed, attributed, and agreement with labels.
// params: $run_id, $system
// returns: system, traces, cases, failed, attributed, blamed, attribution_errors, labeled, op_matches, type_matches
// In Neo4j Browser: :params {run_id: 'demo', system: null}
// The run's traces are those it attributed a case of; labels are benchmark or human LABELED edges.
MATCH (x:Attribution {run_id: $run_id})
WITH collect(DISTINCT x.trace_id) AS run_traces
MATCH (t:Trace)
WHERE t.id IN run_traces AND ($system IS NULL OR t.system = $system)
MATCH (t)-[:HAS_CASE]->(c:Case)
OPTIONAL MATCH (c)-[:HAS_ATTRIBUTION]->(a:Attribution {run_id: $run_id})
OPTIONAL MATCH (a)-[:BLAMES]->(o:Operation)
OPTIONAL MATCH (c)-[l:LABELED]->(lo:Operation)
WITH t, c, a, o, head(collect(l)) AS label, head(collect(lo)) AS label_op
RETURN t.system AS system, count(DISTINCT t) AS traces, count(c) AS cases,
       count(CASE WHEN c.failed THEN c END) AS failed, count(a) AS attributed,
       count(o) AS blamed, count(CASE WHEN a.error IS NOT NULL THEN a END) AS attribution_errors,
       count(CASE WHEN a IS NOT NULL AND label IS NOT NULL THEN a END) AS labeled,
       count(CASE WHEN o IS NOT NULL AND o = label_op THEN a END) AS op_matches,
       count(CASE WHEN a.error_type IS NOT NULL AND a.error_type = label.error_type THEN a END)
         AS type_matches
ORDER BY system
