// The run id of the most recently written attribution.
// params: -
// returns: run_id
MATCH (a:Attribution)
RETURN a.run_id AS run_id
ORDER BY a.created_at DESC
LIMIT 1
