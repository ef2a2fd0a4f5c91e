// Case ids are unique within a trace.
// params: -
// returns: -
CREATE CONSTRAINT case_key IF NOT EXISTS FOR (n:Case) REQUIRE (n.trace_id, n.id) IS UNIQUE
