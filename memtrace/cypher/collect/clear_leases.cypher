// At a receiver's start: delete its spool's leases (their process is dead) and expired ones.
// params: $owner
// returns: cleared
// The spool is held by one process at a time, so leases of this owner left from before are a
// dead process's; an expired lease belongs to a receiver that never came back.
MATCH (l:CollectorLease)
WHERE l.owner = $owner OR l.expires < datetime() OR l.owner IS NULL
DELETE l
RETURN count(*) AS cleared
