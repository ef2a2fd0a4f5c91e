// Operation ids are unique within a trace.
// params: -
// returns: -
CREATE CONSTRAINT operation_key IF NOT EXISTS FOR (n:Operation) REQUIRE (n.trace_id, n.id) IS UNIQUE
