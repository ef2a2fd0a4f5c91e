// Undo one review: delete it and give its reviewer's label of the case back to their latest remaining decision (none: no human label of theirs).
// params: $review_id, $reviewer
// returns: trace_id, case_id, decision, labeled
// Only the label the undone review wrote is touched: a review that labelled nothing (a skip, an
// import older than the reviewer's latest decision) leaves every label as it is.
MATCH (c:Case)-[:HAS_REVIEW]->(r:Review {id: $review_id, reviewer: $reviewer})
WITH c, r, r.trace_id AS trace_id, r.case_id AS case_id, r.decision AS decision
OPTIONAL MATCH (c)-[own:LABELED {source: 'human', reviewer: $reviewer, review_id: $review_id}]->()
WITH c, r, trace_id, case_id, decision, collect(own) AS owns
FOREACH (l IN owns | DELETE l)
DETACH DELETE r
WITH c, trace_id, case_id, decision, size(owns) > 0 AS held_label
CALL (c, trace_id, held_label) {
  OPTIONAL MATCH (c)-[:HAS_REVIEW]->(p:Review {reviewer: $reviewer})
  WHERE held_label AND p.decision <> 'skip'
  WITH p ORDER BY p.at DESC LIMIT 1
  MATCH (o:Operation {trace_id: trace_id, id: p.op_id})
  CREATE (c)-[l:LABELED]->(o)
  SET l.source = 'human', l.reviewer = p.reviewer, l.error_type = p.error_type,
      l.reason = p.reason, l.review_id = p.id, l.at = p.at
  RETURN count(l) AS labeled
}
RETURN trace_id, case_id, decision, labeled
