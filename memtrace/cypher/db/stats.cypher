// Node and relationship counts of the memtrace graph (from the count store: fast).
// params: -
// returns: traces, sessions, operations, variables, cases, failed_cases, reads, writes, flows_to, next_version, deletes, depends_on, labeled, evidence
RETURN COUNT { MATCH (:Trace) } AS traces,
       COUNT { MATCH (:Session) } AS sessions,
       COUNT { MATCH (:Operation) } AS operations,
       COUNT { MATCH (:Variable) } AS variables,
       COUNT { MATCH (:Case) } AS cases,
       COUNT { MATCH (c:Case) WHERE c.failed = true } AS failed_cases,
       COUNT { MATCH ()-[:READS]->() } AS reads,
       COUNT { MATCH ()-[:WRITES]->() } AS writes,
       COUNT { MATCH ()-[:FLOWS_TO]->() } AS flows_to,
       COUNT { MATCH ()-[:NEXT_VERSION]->() } AS next_version,
       COUNT { MATCH ()-[:DELETES]->() } AS deletes,
       COUNT { MATCH ()-[:DEPENDS_ON]->() } AS depends_on,
       COUNT { MATCH ()-[:LABELED]->() } AS labeled,
       COUNT { MATCH ()-[:EVIDENCE]->() } AS evidence
