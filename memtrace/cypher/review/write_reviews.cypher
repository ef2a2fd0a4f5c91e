// Write reviews and, for confirm / correct, the reviewer's human label of the case (replacing only that reviewer's older one).
// params: $rows
// returns: trace_id, case_id, review_id, labeled
// row: {trace_id, case_id, run_id, at (null: now), reason, review: {id, reviewer, decision,
// op_id, error_type, note}}. A row whose case, or (unless it skips) whose op, does not resolve
// writes nothing and returns no row. A LABELED edge of another source, or of another reviewer,
// is never touched; a review older than the reviewer's latest one (an import) changes no label.
UNWIND $rows AS row
MATCH (c:Case {trace_id: row.trace_id, id: row.case_id})
OPTIONAL MATCH (o:Operation {trace_id: row.trace_id, id: row.review.op_id})
WITH row, c, o
WHERE o IS NOT NULL OR row.review.decision = 'skip'
OPTIONAL MATCH (c)-[:HAS_ATTRIBUTION]->(a:Attribution {run_id: row.run_id})
CREATE (c)-[:HAS_REVIEW]->(r:Review)
SET r = row.review, r.trace_id = row.trace_id, r.case_id = row.case_id, r.run_id = row.run_id,
    r.reason = row.reason, r.at = coalesce(datetime(row.at), datetime())
FOREACH (_ IN CASE WHEN a IS NULL THEN [] ELSE [1] END | CREATE (r)-[:REVIEWS]->(a))
WITH row, c, o, r
CALL (row, c, o, r) {
  WITH row, c, o, r
  WHERE r.decision <> 'skip'
    AND NOT EXISTS {
      (c)-[:HAS_REVIEW]->(newer:Review {reviewer: r.reviewer})
      WHERE newer.at > r.at AND newer.decision <> 'skip'
    }
  OPTIONAL MATCH (c)-[old:LABELED {source: 'human', reviewer: r.reviewer}]->(:Operation)
  DELETE old
  WITH DISTINCT row, c, o, r
  CREATE (c)-[l:LABELED]->(o)
  SET l.source = 'human', l.reviewer = r.reviewer, l.error_type = r.error_type,
      l.reason = row.reason, l.review_id = r.id, l.at = r.at
  RETURN count(l) AS labeled
}
RETURN row.trace_id AS trace_id, row.case_id AS case_id, r.id AS review_id, labeled
