// Every node of the database, of any label (from the count store: fast); a bulk import needs 0.
// params: -
// returns: nodes
MATCH (n)
RETURN count(n) AS nodes
