// Give back the leases a receiver holds on traces it has loaded (or failed to).
// params: $trace_ids, $owner
// returns: released
UNWIND $trace_ids AS trace_id
MATCH (l:CollectorLease {trace_id: trace_id})
WHERE l.owner = $owner
SET l.owner = null, l.expires = null
RETURN count(l) AS released
