// Attribution runs in the database, newest first, with their case counts.
// params: -
// returns: run_id, cases, attributed, started, finished
MATCH (a:Attribution)
RETURN a.run_id AS run_id, count(a) AS cases,
       count(CASE WHEN a.error IS NULL THEN a END) AS attributed,
       toString(min(a.created_at)) AS started, toString(max(a.created_at)) AS finished
ORDER BY finished DESC
