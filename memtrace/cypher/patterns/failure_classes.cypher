// Failure classes of one attribution run: blamed op (system, name, kind) x error type x the prompt / parameter versions it read.
// params: $run_id, $system, $error_type, $min_count
// returns: system, op_name, op_kind, error_type, inputs, prompts, parameters, cases, failures, blamed_operations, executions, share_of_failures, share_of_executions, median_confidence, example_cases, case_refs
// In Neo4j Browser: :params {run_id: 'demo', system: null, error_type: null, min_count: 1}
// failures: every case the run attributed in the system (also those whose attribution failed);
// executions: how often an op of that name ran in the run's traces of the system.
// case_refs: [trace_id, case_id] of every case of the class (case ids repeat across traces).
MATCH (x:Attribution {run_id: $run_id})
MATCH (t:Trace {id: x.trace_id})
WHERE $system IS NULL OR t.system = $system
WITH t.system AS system, count(x) AS failures, collect(DISTINCT t.id) AS run_traces
UNWIND run_traces AS trace_id
MATCH (a:Attribution {run_id: $run_id, trace_id: trace_id})-[:BLAMES]->(o:Operation)
WHERE $error_type IS NULL OR a.error_type = $error_type
CALL (o) {
  OPTIONAL MATCH (o)-[:READS]->(v:Variable)
  WHERE v.category IN ['prompt', 'parameter']
  WITH v ORDER BY v.name, v.version
  RETURN collect(v.name + '@' + toString(coalesce(v.version, 1))) AS inputs,
         collect(CASE v.category WHEN 'prompt' THEN v.name END) AS prompts,
         collect(CASE v.category WHEN 'parameter' THEN v.name END) AS parameters
}
WITH system, failures, run_traces, o.name AS op_name, o.kind AS op_kind,
     a.error_type AS error_type, inputs, prompts, parameters, a, o
ORDER BY a.case_id, a.trace_id
WITH system, failures, run_traces, op_name, op_kind, error_type, inputs, prompts, parameters,
     count(a) AS cases, count(DISTINCT o) AS blamed_operations,
     percentileCont(a.confidence, 0.5) AS median_confidence,
     collect(a.case_id)[0..3] AS example_cases, collect([a.trace_id, a.case_id]) AS case_refs
WHERE cases >= $min_count
CALL (op_name, op_kind, run_traces) {
  UNWIND run_traces AS trace_id
  MATCH (e:Operation {trace_id: trace_id, kind: op_kind})
  WHERE e.name = op_name
  RETURN count(e) AS executions
}
RETURN system, op_name, op_kind, error_type, inputs, prompts, parameters, cases, failures,
       blamed_operations, executions,
       toFloat(cases) / failures AS share_of_failures,
       toFloat(blamed_operations) / executions AS share_of_executions,
       median_confidence, example_cases, case_refs
ORDER BY cases DESC, system, op_name, error_type
