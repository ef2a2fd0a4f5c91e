// Whether any attribution was written under this run id.
// params: $run_id
// returns: found
OPTIONAL MATCH (a:Attribution {run_id: $run_id})
WITH a LIMIT 1
RETURN a IS NOT NULL AS found
