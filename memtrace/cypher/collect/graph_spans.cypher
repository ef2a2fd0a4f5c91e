// The span ids the graph holds for traces about to be loaded again (a load replaces a trace).
// params: $trace_ids
// returns: trace_id, span_ids
UNWIND $trace_ids AS trace_id
MATCH (o:Operation {trace_id: trace_id})
RETURN trace_id, collect(o.id) AS span_ids
