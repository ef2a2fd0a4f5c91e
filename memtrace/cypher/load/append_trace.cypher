// Append step (first): the timeline's trace node, created complete on its first append; its counts and next free seq grow with each append. Writing it locks it, so appends to one timeline commit one at a time.
// params: $trace_id, $props, $counts, $next_seq
// returns: appended
MERGE (t:Trace {id: $trace_id})
ON CREATE SET t += $props, t.load_state = 'complete', t.loaded_at = datetime()
SET t.next_seq = $next_seq, t.appended_at = datetime(),
    t.n_requests = coalesce(t.n_requests, 0) + $counts.n_requests,
    t.n_sessions = coalesce(t.n_sessions, 0) + $counts.n_sessions,
    t.n_operations = coalesce(t.n_operations, 0) + $counts.n_operations,
    t.n_variables = coalesce(t.n_variables, 0) + $counts.n_variables,
    t.n_edges = coalesce(t.n_edges, 0) + $counts.n_edges,
    t.n_cases = coalesce(t.n_cases, 0) + $counts.n_cases,
    t.n_failed_cases = coalesce(t.n_failed_cases, 0) + $counts.n_failed_cases,
    t.n_labels = coalesce(t.n_labels, 0) + $counts.n_labels,
    t.meta_unread_content_spans =
      coalesce(t.meta_unread_content_spans, 0) + $counts.unread_content_spans,
    t.meta_unknown_kind_spans = coalesce(t.meta_unknown_kind_spans, 0) + $counts.unknown_kind_spans
RETURN count(t) AS appended
