// The span ids the graph holds for traces about to be loaded again (a load replaces a trace).
// params: $trace_ids
// returns: trace_id, span_ids
UNWIND $trace_ids AS trace_id
// `o.id IS NOT NULL` lets the planner seek the (trace_id, id) key instead of scanning every
// :Operation (the map form under UNWIND plans a label scan on Neo4j 5.26)
MATCH (o:Operation)
WHERE o.trace_id = trace_id AND o.id IS NOT NULL
RETURN trace_id, collect(o.id) AS span_ids
