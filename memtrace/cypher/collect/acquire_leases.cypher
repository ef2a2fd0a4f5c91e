// Take the lease on the traces a receiver is about to load: free, expired or already its own.
// params: $trace_ids, $owner, $seconds
// returns: trace_id
UNWIND $trace_ids AS trace_id
MERGE (l:CollectorLease {trace_id: trace_id})
// writing first takes the node's lock, so the owner read next is the committed one: two
// receivers never both see a lease as free
SET l.claimed_at = datetime()
WITH l, trace_id
WHERE l.owner IS NULL OR l.owner = $owner OR l.expires < datetime()
SET l.owner = $owner, l.expires = datetime() + duration({seconds: $seconds})
RETURN trace_id
