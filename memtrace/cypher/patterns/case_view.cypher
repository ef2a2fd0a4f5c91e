// Neo4j Browser view of one case of a run: the case, its verdict, the blamed operation with what it read and wrote, the evidence.
// params: $run_id, $trace_id, $case_id
// returns: c, a, blamed, io, evidence
MATCH (c:Case {trace_id: $trace_id, id: $case_id})-[:HAS_ATTRIBUTION]->(a:Attribution {run_id: $run_id})
OPTIONAL MATCH (a)-[:BLAMES]->(blamed:Operation)
OPTIONAL MATCH io = (blamed)-[:READS|WRITES]->(:Variable)
OPTIONAL MATCH evidence = (c)-[:EVIDENCE]->(:Variable)
RETURN c, a, blamed, io, evidence
LIMIT 200
