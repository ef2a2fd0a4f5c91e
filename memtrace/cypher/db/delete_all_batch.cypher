// Delete up to $limit nodes of the whole database; repeat until 0 (needs --all --yes).
// params: $limit
// returns: deleted
MATCH (n)
WITH n LIMIT $limit
DETACH DELETE n
RETURN count(*) AS deleted
