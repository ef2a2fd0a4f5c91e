// Evidence-loss funnel of one run per system: of the evidence failed cases needed, how much was extracted, survived updates and deletions, was retrieved, reached the answer context.
// params: $run_id, $system
// returns: system, cases, needed, extracted, survived, retrieved, in_context, unknown
// In Neo4j Browser: :params {run_id: 'demo', system: null}
// Each case's verdict names the stage its evidence stopped at (attribution followed every
// evidence message to where it was lost), so its evidence counts up to the stage before:
// ExtractionError -> needed; Update/DeletionError -> extracted; RetrievalError -> survived;
// ResponseError at a non-generation op -> retrieved; at the answer op -> reached its context.
// unknown: evidence of cases whose attribution failed.
MATCH (c:Case)-[:HAS_ATTRIBUTION]->(a:Attribution {run_id: $run_id})
MATCH (t:Trace {id: a.trace_id})
WHERE $system IS NULL OR t.system = $system
OPTIONAL MATCH (a)-[:BLAMES]->(o:Operation)
WITH t.system AS system, a, o, COUNT { (c)-[:EVIDENCE]->(:Variable) } AS evidence
WITH system, a, evidence,
     CASE WHEN o IS NULL THEN -1
          WHEN a.error_type = 'ExtractionError' THEN 0
          WHEN a.error_type IN ['UpdateError', 'DeletionError'] THEN 1
          WHEN a.error_type = 'RetrievalError' THEN 2
          WHEN o.kind <> 'generation' THEN 3
          ELSE 4 END AS reached
RETURN system, count(a) AS cases,
       sum(CASE WHEN reached >= 0 THEN evidence ELSE 0 END) AS needed,
       sum(CASE WHEN reached >= 1 THEN evidence ELSE 0 END) AS extracted,
       sum(CASE WHEN reached >= 2 THEN evidence ELSE 0 END) AS survived,
       sum(CASE WHEN reached >= 3 THEN evidence ELSE 0 END) AS retrieved,
       sum(CASE WHEN reached >= 4 THEN evidence ELSE 0 END) AS in_context,
       sum(CASE WHEN reached < 0 THEN evidence ELSE 0 END) AS unknown
ORDER BY system
