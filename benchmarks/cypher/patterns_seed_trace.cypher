// Benchmark seed: one complete trace with versioned prompts, top_k, messages, and an extraction and an update op per message.
// params: $trace_id, $system, $version, $messages
// returns: -
CREATE (t:Trace {id: $trace_id, system: $system, load_state: 'complete', source: 'bench'})
CREATE (p:Variable {trace_id: $trace_id, id: 'extract-prompt@' + $version, seq: 0,
        name: 'extract-prompt', version: $version, category: 'prompt', value: 'Extract.'})
CREATE (q:Variable {trace_id: $trace_id, id: 'qa-prompt@1', seq: 1, name: 'qa-prompt',
        version: 1, category: 'prompt', value: 'Answer.'})
CREATE (k:Variable {trace_id: $trace_id, id: 'top_k@1', seq: 2, name: 'top_k', version: 1,
        category: 'parameter', class_name: 'parameter', value: '10'})
WITH p
UNWIND range(0, $messages - 1) AS i
CREATE (m:Variable {trace_id: $trace_id, id: 'm' + i, seq: 10 + 3 * i, name: 'm' + i,
        version: 1, category: 'message', session: 's' + (i / 20), value: 'message ' + i})
CREATE (x:Operation {trace_id: $trace_id, id: 'ex' + i, seq: 11 + 3 * i,
        name: 'memory_system.extract_facts', kind: 'extraction'})
CREATE (u:Operation {trace_id: $trace_id, id: 'up' + i, seq: 12 + 3 * i,
        name: 'memory_system.update_memory_decision', kind: 'update'})
CREATE (x)-[:READS]->(m), (x)-[:READS]->(p), (u)-[:READS]->(m)
