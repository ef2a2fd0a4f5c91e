// Every loaded trace with its load state and counts; re-load copies (staging, retired) name the trace they belong to.
// params: -
// returns: id, system, dataset, source, load_state, copy_of, loaded_at, operations, variables, edges, cases, failed_cases, labels
MATCH (t:Trace)
RETURN t.id AS id, t.system AS system, t.dataset AS dataset, t.source AS source,
       t.load_state AS load_state, properties(t).copy_of AS copy_of, toString(t.loaded_at) AS loaded_at,
       t.n_operations AS operations, t.n_variables AS variables, t.n_edges AS edges,
       t.n_cases AS cases, t.n_failed_cases AS failed_cases, t.n_labels AS labels
ORDER BY t.id
