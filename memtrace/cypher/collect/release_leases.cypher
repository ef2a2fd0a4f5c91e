// Delete the leases a receiver holds on traces it has loaded (or failed to).
// params: $trace_ids, $owner
// returns: released
// A spent lease is no node at all: :CollectorLease holds only the traces being loaded now.
UNWIND $trace_ids AS trace_id
MATCH (l:CollectorLease {trace_id: trace_id})
WHERE l.owner = $owner
DELETE l
RETURN count(*) AS released
