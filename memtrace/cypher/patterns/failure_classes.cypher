// Failure classes of one attribution run: blamed op (system, name, kind) x error type x failure mode x the prompt / parameter versions it read.
// params: $run_id, $system, $error_type, $min_count
// returns: system, op_name, op_kind, error_type, failure_mode, inputs, prompts, parameters, cases, failures, blamed_operations, executions, share_of_failures, share_of_executions, median_confidence, example_cases, case_refs
// In Neo4j Browser: :params {run_id: 'demo', system: null, error_type: null, min_count: 1}
// failures: every case the run attributed in the system (also those whose attribution failed);
// executions: how often an op of that name ran in the run's traces of the system.
// case_refs: [trace_id, case_id] of every case of the class (case ids repeat across traces).
MATCH (x:Attribution {run_id: $run_id})
WITH x.trace_id AS trace_id, count(x) AS attributed
MATCH (t:Trace {id: trace_id})
WHERE $system IS NULL OR t.system = $system
WITH t.system AS system, sum(attributed) AS failures, collect(t.id) AS run_traces
UNWIND run_traces AS trace_id
MATCH (a:Attribution {run_id: $run_id, trace_id: trace_id})-[:BLAMES]->(o:Operation)
WHERE $error_type IS NULL OR a.error_type = $error_type
// one row per blamed operation: its prompt / parameter reads are looked up once, not per case
WITH system, failures, run_traces, o, a.error_type AS error_type,
     coalesce(a.failure_mode, '') AS failure_mode, collect([a.case_id, a.trace_id, a.confidence]) AS blamed
CALL (o) {
  OPTIONAL MATCH (o)-[:READS]->(v:Variable)
  WHERE v.category IN ['prompt', 'parameter']
  WITH v ORDER BY v.name, v.version
  RETURN collect(v.name + '@' + toString(coalesce(v.version, 1))) AS inputs,
         collect(CASE v.category WHEN 'prompt' THEN v.name END) AS prompts,
         collect(CASE v.category WHEN 'parameter' THEN v.name END) AS parameters
}
UNWIND blamed AS blamed_case
WITH system, failures, run_traces, o.name AS op_name, o.kind AS op_kind, error_type, failure_mode,
     inputs, prompts, parameters, o, blamed_case
ORDER BY blamed_case[0], blamed_case[1]
WITH system, failures, run_traces, op_name, op_kind, error_type, failure_mode, inputs, prompts,
     parameters, count(blamed_case) AS cases, count(DISTINCT o) AS blamed_operations,
     percentileCont(blamed_case[2], 0.5) AS median_confidence,
     collect(blamed_case[0])[0..3] AS example_cases, collect([blamed_case[1], blamed_case[0]]) AS case_refs
WHERE cases >= $min_count
CALL (op_name, op_kind, run_traces) {
  UNWIND run_traces AS trace_id
  MATCH (e:Operation {trace_id: trace_id, kind: op_kind})
  WHERE e.name = op_name
  RETURN count(e) AS executions
}
RETURN system, op_name, op_kind, error_type, failure_mode, inputs, prompts, parameters, cases, failures,
       blamed_operations, executions,
       toFloat(cases) / failures AS share_of_failures,
       toFloat(blamed_operations) / executions AS share_of_executions,
       median_confidence, example_cases, case_refs
ORDER BY cases DESC, system, op_name, error_type, failure_mode
