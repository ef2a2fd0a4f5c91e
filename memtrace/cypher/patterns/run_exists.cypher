// Whether an attribution run has any attribution: one index lookup, not a scan of every run.
// params: $run_id
// returns: found
RETURN EXISTS { (:Attribution {run_id: $run_id}) } AS found
