// Swap step (last): the trace's reviews move to the new copy's cases, and each reviewer's latest human label comes back where its op still exists.
// params: $trace_id
// returns: relinked
// Reviews are people's work: a re-load drops the old copy's attributions (their REVIEWS edges
// go with them), but not what reviewers decided. A review whose case or op the new copy lacks
// stays unlinked (it keeps trace_id and case_id).
MATCH (r:Review {trace_id: $trace_id})
OPTIONAL MATCH (r)<-[old:HAS_REVIEW]-(:Case)
DELETE old
WITH DISTINCT r
MATCH (c:Case {trace_id: $trace_id, id: r.case_id})
CREATE (c)-[:HAS_REVIEW]->(r)
WITH c, r
WHERE r.decision <> 'skip'
WITH c, r ORDER BY r.at DESC
WITH c, r.reviewer AS reviewer, head(collect(r)) AS latest
MATCH (o:Operation {trace_id: $trace_id, id: latest.op_id})
CREATE (c)-[l:LABELED]->(o)
SET l.source = 'human', l.reviewer = reviewer, l.error_type = latest.error_type,
    l.reason = latest.reason, l.review_id = latest.id, l.at = latest.at
RETURN count(l) AS relinked
