// The heartbeat of a receiver's load in progress: push its leases' expiry on.
// params: $trace_ids, $owner, $seconds
// returns: renewed
UNWIND $trace_ids AS trace_id
MATCH (l:CollectorLease {trace_id: trace_id})
WHERE l.owner = $owner
SET l.expires = datetime() + duration({seconds: $seconds})
RETURN count(*) AS renewed
