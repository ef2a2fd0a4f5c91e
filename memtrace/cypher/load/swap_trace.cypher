// Swap step (first): the old trace node becomes the retired copy, the staged one the complete trace with its counts.
// params: $trace_id, $staged_id, $retired_id, $counts
// returns: swapped
// The same transaction then drops the old copy's attributions and re-keys both copies'
// nodes (drop_attributions, rekey_copy): it commits whole or not at all, so the trace has one
// complete copy after any crash (a query overlapping the commit may see part of it:
// docs/reliability.md). swapped = 0: no staged copy, nothing done.
MATCH (new:Trace {id: $staged_id})
WHERE new.load_state = 'staging'
OPTIONAL MATCH (old:Trace {id: $trace_id})
FOREACH (_ IN CASE WHEN old IS NULL THEN [] ELSE [1] END |
  SET old.id = $retired_id, old.load_state = 'retired', old.copy_of = $trace_id
)
SET new.id = $trace_id, new += $counts, new.load_state = 'complete'
REMOVE new.copy_of
RETURN count(new) AS swapped
