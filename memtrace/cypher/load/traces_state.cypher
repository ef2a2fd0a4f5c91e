// The load state of traces before a load: null (new), 'loading' (interrupted) or 'complete' (kept until a re-load swaps), their node counts, and whether a re-load left a staged or retired copy.
// params: $rows
// returns: trace_id, load_state, nodes, copies
// rows: {id, staged, retired}, the copies' ids (taxonomy.py); every lookup is a seek of the
// Trace id constraint
UNWIND $rows AS row
OPTIONAL MATCH (t:Trace {id: row.id})
RETURN row.id AS trace_id,
       t.load_state AS load_state,
       coalesce(t.n_sessions, 0) + coalesce(t.n_operations, 0) + coalesce(t.n_variables, 0)
         + coalesce(t.n_cases, 0) AS nodes,
       EXISTS { MATCH (c:Trace {id: row.staged}) } OR EXISTS { MATCH (c:Trace {id: row.retired}) }
         AS copies
